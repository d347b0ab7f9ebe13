"""What the L2 flush before each timed call costs the call after it: the
flush as the harness does it (twice the L2 read) against the flush as it was
(twice the L2 written, which leaves dirty lines for the timed call to write
back), timed through the harness's own timed path (CudaRuntime.timed_call):

    python gpu/l2_flush/measure.py

Memory-bound calls: reference/vector_add.cu and reference/prefix_sum.cu at
their official sizes, a CuPy device-to-device copy of 256 MB, and
vector_add at 25 MB moved, which fits in the L2: there a third mode, a wait
as long as the flush that touches no memory, shows how fast the call runs
from a warm L2. (On an H200 it ran 10.8 us warm, 10.6 us after the read flush
and 12.3 us after the written one: at that size vector_add gains nothing from
a warm L2, so this case shows the write-back's cost, not the eviction.)
Each is timed in alternating blocks of 50 calls under each mode; prints the medians, their 10th-90th
percentiles and the share of the copy bandwidth (measured without a flush,
as `% copy BW` is). Needs a GPU and nvcc."""

from __future__ import annotations

import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import cupy

from harness.backends.cuda import CudaRuntime
from harness.backends.library import load_solve
from harness.challenge import load_challenge

REPO = Path(__file__).resolve().parents[2]


def build(name: str, into: Path) -> Callable[..., None]:
    library = into / f"{name}.so"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                    str(REPO / "reference" / f"{name}.cu"), "-o", str(library)], check=True)
    return load_solve(library, load_challenge(name, REPO))[1]


def main() -> None:
    runtime = CudaRuntime()
    copy_rate = runtime.copy_bandwidth()
    read_flush = runtime.flush_l2
    def write_flush() -> None:  # the reset as before, then the old write
        runtime._driver_call("cuCtxResetPersistingL2Cache")
        runtime._flush.fill(0)
    # A wait as long as the flush that touches no memory: the call is launched
    # while it runs, as after a flush, so only the L2's contents differ.
    spin = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}''', "spin")
    idle = lambda: spin((1,), (1,), (cupy.int64(60_000),))  # about 30 us at 1.98 GHz
    n, small = 1 << 25, 1 << 21
    a, b, c = (cupy.random.rand(n, dtype=cupy.float32) for _ in range(3))
    src = cupy.ones(1 << 26, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    with tempfile.TemporaryDirectory() as scratch:
        vector_add, prefix_sum = build("vector_add", Path(scratch)), build("prefix_sum", Path(scratch))
        calls = {
            "vector_add N=2^25 (402.7 MB)": (lambda: vector_add(a.data.ptr, b.data.ptr, c.data.ptr, n), 12 * n),
            "prefix_sum N=2^25 (268.4 MB)": (lambda: prefix_sum(a.data.ptr, c.data.ptr, n), 8 * n),
            "cupy copy 256 MB (536.9 MB)": (lambda: dst.__setitem__(Ellipsis, src), 2 * src.nbytes),
            "vector_add N=2^21 (25.2 MB)": (lambda: vector_add(a.data.ptr, b.data.ptr, c.data.ptr, small), 12 * small),
        }
        modes = {"read": read_flush, "write": write_flush}
        for label, (call, moved) in calls.items():
            if moved < 50e6:  # fits in the L2: the same wait, with the L2 left as the last call left it
                modes["resident"] = idle
            times: dict[str, list[float]] = {kind: [] for kind in modes}
            for _ in range(6):
                for kind, flush in modes.items():
                    runtime.flush_l2 = flush
                    times[kind] += [runtime.timed_call(call).gpu_time_s for _ in range(50)]
            runtime.flush_l2 = read_flush
            runtime.check()
            floor = moved / copy_rate
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{label}: floor {floor * 1e6:.1f} us at {copy_rate / 1e12:.2f} TB/s; "
                  + "; ".join(f"{k} flush median {m * 1e6:.1f} us ({floor / m:.1%} of copy BW, "
                              f"p10-p90 {statistics.quantiles(times[k], n=10)[0] * 1e6:.1f}-"
                              f"{statistics.quantiles(times[k], n=10)[-1] * 1e6:.1f})" for k, m in med.items())
                  + f"; write - read {(med['write'] - med['read']) * 1e6:.1f} us", flush=True)


if __name__ == "__main__":
    main()
