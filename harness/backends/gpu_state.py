"""The state of the GPU that sets a kernel's speed: SM clock, temperature and the
reasons the driver gives for holding the clock down, read through NVML
(libnvidia-ml, which ships with the driver) in the child process around timing.
A measurement whose clock moved between its start and its end is flagged, so
two numbers taken under different clocks are not compared as equals."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0
# Reasons that mean "slower than it could be" (nvmlClocksEventReason*): software power
# cap, hardware slowdown, thermal (software and hardware), power brake. Idle and the
# application clock setting are not slowdowns.
SLOWDOWN_REASONS = {0x4: "power cap", 0x8: "hardware slowdown", 0x20: "thermal (software)", 0x40: "thermal (hardware)", 0x80: "power brake"}
CLOCK_MOVED_RELATIVE = 0.02  # an SM clock that differs by more than this between start and end


@dataclass(frozen=True)
class GpuState:
    sm_clock_mhz: int
    temperature_c: int
    slowdowns: tuple[str, ...]  # SLOWDOWN_REASONS active at the moment of reading


def clock_moved(before: GpuState | None, after: GpuState | None) -> str | None:
    """Why a measurement between these two readings is not at one clock, or None."""
    if before is None or after is None:
        return None
    reasons = []
    if abs(after.sm_clock_mhz - before.sm_clock_mhz) > CLOCK_MOVED_RELATIVE * max(before.sm_clock_mhz, 1):
        reasons.append(f"SM clock {before.sm_clock_mhz} -> {after.sm_clock_mhz} MHz")
    slowdowns = sorted(set(before.slowdowns) | set(after.slowdowns))
    if slowdowns:
        reasons.append("clock held down: " + ", ".join(slowdowns))
    return "; ".join(reasons) or None


class Nvml:
    """One GPU, found by its PCI bus id (NVML ignores CUDA_VISIBLE_DEVICES)."""

    def __init__(self, pci_bus_id: str):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._call("nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByPciBusId_v2", pci_bus_id.encode(), ctypes.byref(self.handle))

    def _call(self, name: str, *args: object) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise OSError(f"{name}: NVML status {status}")

    def read(self) -> GpuState:
        clock, temperature, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self._call("nvmlDeviceGetClockInfo", self.handle, NVML_CLOCK_SM, ctypes.byref(clock))
        self._call("nvmlDeviceGetTemperature", self.handle, NVML_TEMPERATURE_GPU, ctypes.byref(temperature))
        self._call("nvmlDeviceGetCurrentClocksThrottleReasons", self.handle, ctypes.byref(reasons))
        slowdowns = tuple(name for bit, name in SLOWDOWN_REASONS.items() if reasons.value & bit)
        return GpuState(clock.value, temperature.value, slowdowns)


def open_nvml(pci_bus_id: str) -> Nvml | None:
    """NVML for this GPU, or None where the library or the device cannot be had
    (the measurement then goes on, without the clock check)."""
    try:
        return Nvml(pci_bus_id)
    except (OSError, AttributeError):
        return None
