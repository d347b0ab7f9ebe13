"""The CUDA backend, as seen from the child process that runs a solution:
CuPy device arrays, ctypes calls into the solution library, CUDA events.
Imported only in children, so the harness process never touches the GPU."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from ..challenge import Challenge
from ..timing.loop import Sample
from .gpu_state import GpuState, open_nvml
from .library import load_solve
from .python_solution import load_python_solution

COPY_BANDWIDTH_BYTES = 1 << 30  # large against the 50-60 MB L2 of current GPUs

# The flush reads twice the L2: that evicts every line (a dirty one is written
# back during the flush) and leaves clean lines, which the timed call drops for
# free. Writing instead left the L2 full of dirty lines, whose write-back the
# timed call paid: 7.1 us of vector_add's 111.7 us on an H200 (README,
# gpu/l2_flush/measure.py).
READ_FLUSH_SOURCE = r'''
extern "C" __global__ void harness_read_flush(const float4* data, unsigned long long count, float* sink) {
    float total = 0.0f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float4 v = data[i];
        total += v.x + v.y + v.z + v.w;
    }
    if (total != 0.0f) *sink = total;  // the data is zeros: never taken, but the loads must happen
}
'''
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # cuda.h's CUlimit


class CudaError(RuntimeError):
    reason = "cuda_error"

    def __init__(self, name: str, text: str):
        super().__init__(f"{name}: {text}")
        self.name = name


class CudaRuntime:
    name = "cuda"

    def __init__(self, unpooled: bool = False) -> None:
        import cupy

        if unpooled:  # every array its own cudaMalloc, as a memory checker needs
            cupy.cuda.set_allocator(None)
        self.xp = cupy
        self.device = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(self.device.id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self._flush = cupy.zeros((2 * int(props["l2CacheSize"]) // 16 + 1) * 4, dtype=cupy.float32)
        self._flush_sink = cupy.zeros(1, dtype=cupy.float32)
        self._read_flush = cupy.RawKernel(READ_FLUSH_SOURCE, "harness_read_flush")
        self._flush_grid = 8 * int(props["multiProcessorCount"])
        self.evict_l2()  # compiles the flush kernel now, off every clock
        self._driver = ctypes.CDLL("libcuda.so.1")  # the same primary context as CuPy and every solution
        self._nvml = open_nvml(self.device.pci_bus_id)
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()
        self._lib: ctypes.CDLL | None = None
        self._noop: Callable[[], None] = lambda: None  # a Python solution's empty call
        # Errors that end a run: the solution's own, and a sticky one CuPy meets first.
        self.error_types = (CudaError, cupy.cuda.runtime.CUDARuntimeError)
        self.recheck_schedules: tuple[str, ...] = ()  # the GPU's schedule is not ours to choose

    def load(self, solution: Path, challenge: Challenge) -> Callable[[Any], None]:
        """A function that calls solve() for a CallSite: through ctypes with
        device pointers for a built library, with arrays for a Python file."""
        if solution.suffix == ".py":
            call = load_python_solution(solution, challenge)
            return lambda site: call(site.arguments(as_arrays=True))
        self._lib, solve = load_solve(solution, challenge)
        self._lib.harness_sync_and_check.restype = ctypes.c_int
        self._lib.harness_error_name.restype = ctypes.c_char_p
        self._lib.harness_error_string.restype = ctypes.c_char_p
        self._noop = self._lib.harness_noop
        return lambda site: solve(*site.arguments())

    def check(self) -> None:
        """Synchronise and raise CudaError on any launch or execution error:
        through the solution's own runtime for a library (its launch errors
        are recorded there), through CuPy's for a Python solution."""
        if self._lib is None:
            try:
                self.xp.cuda.runtime.deviceSynchronize()
            except self.xp.cuda.runtime.CUDARuntimeError as error:
                name, _, text = str(error).partition(": ")  # "cudaErrorIllegalAddress: an illegal ..."
                raise CudaError(name, text) from None
            return
        code = self._lib.harness_sync_and_check()
        if code:
            raise CudaError(self._lib.harness_error_name(code).decode(), self._lib.harness_error_string(code).decode())

    def flush_l2(self) -> None:
        """Evict what a previous call left in L2, persisting lines included: a
        solution may mark its inputs persisting (an access policy window and the
        persisting L2 limit), and normal writes never evict persisting lines.
        Resetting them to normal and the limit to 0 makes the flush complete."""
        self._driver_call("cuCtxResetPersistingL2Cache")
        self._driver_call("cuCtxSetLimit", CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        self.evict_l2()

    def evict_l2(self) -> None:
        """Read twice the L2 (see READ_FLUSH_SOURCE)."""
        count = self.xp.uint64(self._flush.size // 4)
        self._read_flush((self._flush_grid,), (256,), (self._flush, count, self._flush_sink))

    def _driver_call(self, name: str, *args: Any) -> None:
        status = getattr(self._driver, name)(*args)
        if status != 0:
            raise CudaError(name, f"CUresult {status}")

    def timed_call(self, call: Callable[[], None], after_call: Callable[[], None] = lambda: None) -> Sample:
        """Events around the call; the host clock around flush, call and synchronise.
        The flush is left running while the call is launched, so the events see
        the kernels and not the host's launch latency; the same path with an
        empty call (`call_overhead`) is the wall-clock baseline. `after_call`
        (the harness's own checks of the return) runs once the GPU is done, off
        both clocks: run while the kernels still ran, its time would overlap
        theirs, and taking it off the wall clock made the wall shorter than the
        events (5.0 against 6.8 ms measured on an H200)."""
        self.xp.cuda.Stream.null.synchronize()  # input copies and poisoning stay off the host clock
        began = time.perf_counter()
        self.flush_l2()
        self._start.record()
        call()
        self._end.record()
        self.check()
        wall = time.perf_counter() - began
        after_call()
        gpu = self.xp.cuda.get_elapsed_time(self._start, self._end) / 1e3
        return Sample(gpu_time_s=gpu, wall_time_s=wall)

    def call_overhead(self, repeats: int = 50) -> float:
        """Median host wall time of the timed path around an empty library call:
        what every wall-clock sample contains besides the solution's own work
        (the `after_call` check is off the wall clock, so it needs none here)."""
        return sorted(self.timed_call(self._noop).wall_time_s for _ in range(repeats))[repeats // 2]

    def gpu_state(self) -> GpuState | None:
        return self._nvml.read() if self._nvml else None

    def copy_bandwidth(self, repeats: int = 5) -> float:
        """Device-to-device copy rate in bytes/s, counting bytes read plus written."""
        xp = self.xp
        src = xp.ones(COPY_BANDWIDTH_BYTES // 4, dtype=xp.float32)
        dst = xp.empty_like(src)
        dst[...] = src  # warm-up
        times = []
        for _ in range(repeats):
            self._start.record()
            dst[...] = src
            self._end.record()
            self._end.synchronize()
            times.append(xp.cuda.get_elapsed_time(self._start, self._end) / 1e3)
        del src, dst
        return 2 * COPY_BANDWIDTH_BYTES / sorted(times)[len(times) // 2]
