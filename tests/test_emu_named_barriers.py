"""emu backend: named barriers (inline PTX bar.sync / bar.arrive), as
warp-specialized kernels hand tiles from producer warps to consumer warps.

tests/emu_programs/named_barriers.cu runs a producer warp and three consumer
warps over a ring of two shared-memory stages. Its output is only right if
every barrier holds: without them the producer overwrites a stage before the
consumers read it, or the consumers read a stage before it is filled. It runs
in every schedule on emu and once on the GPU, which must agree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).parent / "emu_programs"
sys.path.insert(0, str(PROGRAMS))
import tensor_probes as tp  # noqa: E402

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")
TILE = 96


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> tp.EmuRunner:
    return tp.EmuRunner(tmp_path_factory.mktemp("emu-named-barriers"))


def run_pipeline(runner: tp.Runner, blocks: int, tiles: int, bug: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                                     np.ndarray]:
    rng = np.random.default_rng(blocks * 1000 + tiles)
    x = rng.integers(-50, 50, (blocks, tiles, TILE)).astype(np.float32)  # sums exact in float32
    out, tail = runner.call("named_barriers.cu", x, np.full(x.size, np.nan, np.float32),
                            np.full(blocks, np.nan, np.float32), blocks, tiles, bug)[1:]
    return x, out.reshape(x.shape), tail


def check_pipeline(runner: tp.Runner, blocks: int, tiles: int) -> None:
    """Tile i's consumer c gets element (c + 7 i) % 96 of tile i plus the
    tile's total, and thread 0 stores the block's last value after the
    barrier of the whole block."""
    x, out, tail = run_pipeline(runner, blocks, tiles)
    i = np.arange(tiles)[:, None]
    c = np.arange(TILE)[None, :]
    want = x[:, i, (c + 7 * i) % TILE] + x.sum(axis=2)[:, :, None]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(tail, want[:, -1, -1])


@needs_gxx
@pytest.mark.parametrize("schedule", ["forward", "reverse", "random"])
@pytest.mark.parametrize("blocks, tiles", [(1, 1), (2, 2), (3, 7)])
def test_producer_and_consumers_hand_over_every_tile(runner: tp.EmuRunner, schedule: str, blocks: int,
                                                     tiles: int) -> None:
    lib = runner.library("named_barriers.cu")
    lib.harness_emu_set_schedule({"forward": 0, "reverse": 1, "random": 2}[schedule], blocks + tiles)
    try:
        check_pipeline(runner, blocks, tiles)
    finally:
        lib.harness_emu_set_schedule(0, 0)


def on_the_gpu(tmp_path: Path, check: str, *args: int) -> None:
    """Runs `check`(CudaRunner, *args) in a child process: a barrier that
    never completes on the GPU hangs its kernel, and only a kill ends that."""
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path[:0] = [{str(PROGRAMS)!r}, {str(Path(__file__).parent)!r}]
        import tensor_probes as tp
        import test_emu_named_barriers as t
        t.{check}(tp.CudaRunner(Path({str(tmp_path)!r})), *{args!r})
    """)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{check}{args} did not finish on the GPU in 180 s: a barrier that never completes there")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("blocks, tiles", [(1, 1), (3, 7), (264, 40)])
def test_producer_and_consumers_do_the_same_on_the_gpu(tmp_path: Path, blocks: int, tiles: int) -> None:
    on_the_gpu(tmp_path, "check_pipeline", blocks, tiles)


def check_partial_warp(runner: tp.Runner) -> None:
    """A warp whose upper 16 lanes have exited counts 32 threads at a barrier
    once its other 16 have arrived (the PTX ISA counts warps), so a barrier of
    64 threads completes with that warp and a whole one."""
    tail = run_pipeline(runner, 2, 1, bug=6)[2]
    np.testing.assert_array_equal(tail, [1, 1])


@needs_gxx
def test_a_warp_with_exited_lanes_counts_whole(runner: tp.EmuRunner) -> None:
    check_partial_warp(runner)


@pytest.mark.gpu
def test_a_warp_with_exited_lanes_counts_whole_on_the_gpu(tmp_path: Path) -> None:
    on_the_gpu(tmp_path, "check_partial_warp")


@needs_gxx
@pytest.mark.parametrize("bug, message", [
    (1, r"bar\.arrive at named_barriers\.cu:\d+ in kernel pipeline: barrier 16 is not one of a block's 16 \(0\.\.15\)"),
    (2, r"bar\.sync at named_barriers\.cu:\d+ in kernel pipeline: the thread count 48 of barrier 2 must be a positive "
        r"multiple of 32 and at most the block's 128 threads"),
    (3, r"bar\.sync at named_barriers\.cu:\d+ in kernel pipeline: thread 32 gives barrier 2 a count of 128, but this "
        r"phase began at named_barriers\.cu:\d+ with 64 \(bar\.arrive\)"),
    (4, r"barrier deadlock in kernel pipeline, block \(0,0,0\): 96 of 128 threads wait at named barrier 1 "
        r"\(named_barriers\.cu:\d+; 96 of 128 threads arrived\), 32 exited"),
    (5, r"bar\.arrive at named_barriers\.cu:\d+ in kernel pipeline: thread 0 of block \(0,0,0\) arrives at barrier 2 "
        r"twice in one phase \(the phase began at named_barriers\.cu:\d+; 0 of 64 threads have arrived\)"),
])
def test_named_barrier_misuse_is_reported(runner: tp.EmuRunner, bug: int, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        run_pipeline(runner, 1, 3, bug)
