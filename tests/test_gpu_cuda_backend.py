"""The CUDA backend end to end on a real GPU: correct solutions pass and are
timed with every timed call verified; honest fast work is not flagged, work on
a side stream is. The reason each faulty solution must get, and that one
evaluation loses no result, is tests/test_corpus.py's business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.results import SolutionResult
from harness.evaluation import evaluate_files
from harness.plan import Plan
from harness.timing.loop import Budget

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "corpus" / "ssm_selective_scan"


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def evaluate_one(challenge, name: str, **options) -> SolutionResult:
    (result,) = evaluate_files(challenge, [FIXTURES / name], Plan(**options), REPO)
    return result


@pytest.mark.timed
def test_correct_solution_is_timed_and_every_timed_call_verified(challenge):
    result = evaluate_one(challenge, "correct_sequential.cu", check=False, budget=Budget(min_samples=5, time_s=1.0))
    assert result.passed, result.message
    timing = result.timing
    assert timing is not None and len(timing.gpu_time_s) >= 5
    assert all(t > 0 for t in timing.gpu_time_s)
    assert not timing.escaped
    assert timing.copy_bandwidth_bytes_per_s and timing.copy_bandwidth_bytes_per_s > 1e11
    assert timing.bytes_moved and timing.bytes_moved > 1e8
    # wall clock includes the call and a synchronise: never below the events' time
    assert min(timing.wall_time_s) >= min(timing.gpu_time_s) * 0.9


@pytest.mark.timed
def test_fast_honest_solution_is_not_flagged_but_a_side_stream_is(challenge):
    options = dict(check=False, budget=Budget(min_samples=10, time_s=1.0))
    (reference,) = evaluate_files(challenge, [REPO / "reference" / "ssm_selective_scan.cu"], Plan(**options), REPO)
    assert reference.passed, reference.message
    assert not reference.timing.escaped
    side = evaluate_one(challenge, "side_stream.cu", **options)
    assert side.reason == "timing_escape" and side.timing.escaped
    assert "outside the timer" in side.message


@pytest.mark.timed
def test_wrong_solution_fails_timing_too(challenge):
    result = evaluate_one(challenge, "wrong_no_state.cu", check=False, budget=Budget(min_samples=3, time_s=0.5))
    assert result.reason == "wrong_output"
    assert result.timing is None


@pytest.mark.parametrize(
    "name", ["ssm_selective_scan", "mamba3_scan", "ssm_selective_scan_backward", "mamba3_scan_backward"]
)
def test_reference_is_clean_under_compute_sanitizer(name):
    """`harness check NAME reference/NAME.cu --sanitize`: memcheck, racecheck
    and initcheck find nothing in the kernels the leaderboard is measured against."""
    from click.testing import CliRunner

    from harness.cli import cli

    run = CliRunner().invoke(cli, ["check", name, str(REPO / "reference" / f"{name}.cu"), "--sanitize", "--json"])
    assert run.exit_code == 0, run.output
    (result,) = json.loads(run.stdout)["results"]
    assert result["passed"] and result["message"] == "compute-sanitizer memcheck, racecheck, initcheck: no findings"


def test_the_flush_undoes_a_persisting_l2_carve_out():
    """A solution may set the persisting-L2 limit so that its inputs survive the
    flush; the flush before each timed call sets it back to 0 (and demotes
    persisting lines). Run in a child: this process stays off the GPU."""
    import subprocess
    import sys

    probe = (
        "import ctypes\n"
        "from harness.backends.cuda import CudaRuntime, CU_LIMIT_PERSISTING_L2_CACHE_SIZE as LIMIT\n"
        "runtime = CudaRuntime()\n"  # makes the primary context current, as before a call
        "driver = ctypes.CDLL('libcuda.so.1')\n"
        "carve_out, value = ctypes.c_int(), ctypes.c_size_t()\n"
        "assert driver.cuDeviceGetAttribute(ctypes.byref(carve_out), 108, 0) == 0\n"  # MAX_PERSISTING_L2_CACHE_SIZE
        "assert driver.cuCtxSetLimit(LIMIT, ctypes.c_size_t(carve_out.value)) == 0\n"
        "assert driver.cuCtxGetLimit(ctypes.byref(value), LIMIT) == 0\n"
        "before = value.value\n"
        "runtime.flush_l2()\n"
        "assert driver.cuCtxGetLimit(ctypes.byref(value), LIMIT) == 0\n"
        "print(carve_out.value, before, value.value)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    carve_out, before, after = map(int, out.split())
    assert carve_out > 0 and before > 0, "the GPU offers no persisting L2 to test against"
    assert after == 0
