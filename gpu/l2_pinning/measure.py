"""How much the persisting-L2 exploit gains on vector_add with and without the
harness's defence, timed through the harness's own timed path (CudaRuntime):

    python gpu/l2_pinning/measure.py [N ...]

For each N it builds vector_add_pinned.cu twice (-DPIN=0, -DPIN=1), then
times both, alternating blocks of 50 calls, once with the harness's flush
(persisting lines reset, carve-out set to 0, then twice the L2 read) and
once with the plain read only (the defence off). Prints the medians and
the pinned time against the plain one under the defence (the honest
baseline) for each; needs a GPU. The pinned build sets the carve-out only
when it finds it reset, as a cheat would."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import cupy

from harness.backends.cuda import CudaRuntime
from harness.challenge import load_challenge
from harness.backends.library import load_solve

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def build(flavour: int, into: Path) -> Path:
    library = into / f"pin{flavour}.so"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", f"-DPIN={flavour}",
                    str(HERE / "vector_add_pinned.cu"), "-o", str(library)], check=True)
    return library


def main(sizes: list[int]) -> None:
    challenge = load_challenge("vector_add", REPO)
    runtime = CudaRuntime()
    defended = runtime.flush_l2
    undefended = runtime.evict_l2  # the flush without the reset
    with tempfile.TemporaryDirectory() as scratch:
        solves = {flavour: load_solve(build(flavour, Path(scratch)), challenge)[1] for flavour in (0, 1)}
        for n in sizes:
            a, b = cupy.random.rand(n, dtype=cupy.float32), cupy.random.rand(n, dtype=cupy.float32)
            c = cupy.empty_like(a)
            honest = None
            for defence, flush in (("on", defended), ("off", undefended)):
                runtime.flush_l2 = flush
                times: dict[int, list[float]] = {0: [], 1: []}
                for _ in range(6):
                    for flavour, solve in solves.items():
                        call = lambda: solve(a.data.ptr, b.data.ptr, c.data.ptr, n)
                        times[flavour] += [runtime.timed_call(call).gpu_time_s for _ in range(50)]
                assert bool(cupy.allclose(c, a + b))
                plain, pinned = (statistics.median(times[f]) * 1e6 for f in (0, 1))
                honest = honest or plain
                print(f"N={n:>10} ({12 * n / 1e6:7.1f} MB moved)  defence {defence:>3}: "
                      f"plain {plain:8.2f} us  pinned {pinned:8.2f} us  pinned/honest plain {pinned / honest:.3f}")
            runtime.flush_l2 = defended
            runtime.check()


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [1 << 21, 1 << 23, 33554432])
