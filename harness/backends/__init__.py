"""Backends: where solutions run. `cuda` on an NVIDIA GPU (correctness and
timing), `emu` on the CPU (correctness only)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import HarnessError, TextEnum, ToolNotFound

if TYPE_CHECKING:
    from .gpu_state import GpuState
    from ..calls import CallSite
    from ..challenge import Challenge
    from ..timing.loop import Sample



class Backend(TextEnum):
    CUDA = "cuda"  # an NVIDIA GPU: correctness and timing
    EMU = "emu"  # the CPU emulator: correctness only


BACKENDS = tuple(b.value for b in Backend)


class Runtime(Protocol):
    """What the child process needs of a backend (backends/cuda.py, backends/emu/host.py)."""

    name: str
    device_name: str
    xp: Any  # the array module: cupy or numpy
    error_types: tuple[type[BaseException], ...]  # errors that end a run
    recheck_schedules: tuple[str, ...]  # thread orders every passing call is repeated in

    def load(self, solution: Path, challenge: Challenge) -> Callable[[CallSite], None]: ...

    def check(self) -> None: ...


class ScheduledRuntime(Runtime, Protocol):
    """A backend that chooses the order of threads (emu)."""

    def schedule(self, name: str) -> AbstractContextManager[None]: ...


class TimingRuntime(Runtime, Protocol):
    def timed_call(self, call: Callable[[], None], after_call: Callable[[], None] = ...) -> Sample: ...

    def call_overhead(self) -> float: ...

    def gpu_state(self) -> GpuState | None: ...

    def copy_bandwidth(self) -> float: ...


# Compute capabilities whose nvcc target has an "a" variant (nvcc 13).
ARCH_SPECIFIC_CAPABILITIES = frozenset({"9.0", "10.0", "10.3", "11.0", "12.0", "12.1"})


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    compute_capability: str  # "9.0"
    driver: str

    @property
    def arch(self) -> str:
        """The device's own nvcc target, with its architecture-specific
        instructions where it has them (sm_90a: wgmma): a solution is built for
        the GPU it runs on and nothing else, and sm_90a runs all sm_90 code."""
        base = "sm_" + self.compute_capability.replace(".", "")
        return base + "a" if self.compute_capability in ARCH_SPECIFIC_CAPABILITIES else base


def visible_gpus() -> list[GpuInfo]:
    """NVIDIA GPUs as nvidia-smi lists them; empty when there is no driver.
    Asked in a subprocess so that the harness process itself never creates a
    CUDA context (children do the GPU work)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    query = "--query-gpu=index,name,uuid,compute_cap,driver_version"
    try:
        out = subprocess.run([smi, query, "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 5 and fields[0].isdigit():
            gpus.append(GpuInfo(int(fields[0]), fields[1], fields[2], fields[3], fields[4]))
    return gpus


def gpu_snapshot() -> list[dict[str, str]]:
    """Identity and state of every GPU for reports: name, UUID, driver, clocks,
    temperature, as nvidia-smi reads them now. Empty without a driver."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    fields = ("index", "name", "uuid", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "temperature.gpu", "power.draw")
    try:
        out = subprocess.run(
            [smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = [[v.strip() for v in line.split(",")] for line in out.stdout.splitlines() if line.strip()]
    names = ("index", "name", "uuid", "driver", "clock_sm_mhz", "clock_mem_mhz", "clock_max_sm_mhz", "temperature_c", "power_w")
    return [dict(zip(names, row)) for row in rows if len(row) == len(fields)]


def parse_gpus(text: str) -> list[int]:
    """`--gpus`: "all" or a comma-separated list of indices."""
    if text == "all":
        indices = [gpu.index for gpu in visible_gpus()]
        if not indices:
            raise ToolNotFound("--gpus all: nvidia-smi finds no GPU")
        return indices
    try:
        indices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise HarnessError(f"--gpus takes 'all' or indices like 0,1, not {text!r}") from None
    if not indices or len(set(indices)) != len(indices):
        raise HarnessError(f"--gpus {text!r}: give each GPU index once")
    return indices


def emu_available() -> bool:
    try:
        from . import emu  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(requested: str) -> tuple[Backend, str]:
    """The backend to use and a note saying why, for `auto`, `cuda` or `emu`."""
    if requested == Backend.CUDA:
        if not visible_gpus():
            raise ToolNotFound("--backend cuda needs a visible NVIDIA GPU (nvidia-smi finds none)")
        return Backend.CUDA, ""
    if requested == Backend.EMU:
        if not emu_available():
            raise ToolNotFound("the emu backend is not available in this installation")
        return Backend.EMU, ""
    gpus = visible_gpus()
    if gpus:
        return Backend.CUDA, f"backend cuda: {gpus[0].name}"
    if emu_available():
        return Backend.EMU, "no NVIDIA GPU visible: using the CPU emulator (correctness only, no timings)"
    raise ToolNotFound("no NVIDIA GPU visible: compiling, validating and timing solutions needs one")
