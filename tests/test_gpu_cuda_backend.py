"""The CUDA backend end to end on a real GPU: correct solutions pass and are
timed; wrong, out-of-bounds, crashing, faulting and hanging ones are each
reported with the right reason, in one evaluation that loses no result."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.results import SolutionResult
from harness.runner import Options, evaluate
from harness.timing.loop import Budget

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "cuda_solutions"


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def evaluate_one(challenge, name: str, **options) -> SolutionResult:
    (result,) = evaluate(challenge, [FIXTURES / name], Options(**options), REPO)
    return result


def test_faulty_solutions_each_get_their_reason_in_one_run(challenge):
    names = [
        "wrong_no_state.cu", "out_of_bounds.cu", "host_crash.cu", "illegal_address.cu", "hang.cu",
        "exit_in_solve.cu", "stdout_flood.cu", "correct_sequential.cu",
    ]
    results = evaluate(challenge, [FIXTURES / n for n in names], Options(time=False, timeout_s=30), REPO)
    reasons = {Path(r.solution).name: r.reason for r in results}
    assert reasons == {
        "wrong_no_state.cu": "wrong_output",
        "out_of_bounds.cu": "out_of_bounds_write",
        "host_crash.cu": "crash",
        "illegal_address.cu": "cuda_error",
        "hang.cu": "timeout",
        "exit_in_solve.cu": "exited",
        "stdout_flood.cu": None,
        "correct_sequential.cu": None,
    }
    by_name = {Path(r.solution).name: r for r in results}
    assert by_name["correct_sequential.cu"].passed
    assert "SIGSEGV" in by_name["host_crash.cu"].message
    assert "cudaErrorIllegalAddress" in by_name["illegal_address.cu"].message
    assert "example" in by_name["hang.cu"].message  # names the test it hung in
    assert "status 3" in by_name["exit_in_solve.cu"].message
    flood = by_name["stdout_flood.cu"]
    assert flood.passed and flood.stdout_bytes > 1_000_000 and flood.stdout_tail.endswith("}\n")
    wrong = by_name["wrong_no_state.cu"].tests[0]
    assert wrong.comparisons[0].worst_axes == ("b", "t", "d")
    assert wrong.comparisons[0].mismatches > 0


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


def test_fast_honest_solution_is_not_flagged_but_a_side_stream_is(challenge):
    options = dict(check=False, budget=Budget(min_samples=10, time_s=1.0))
    (reference,) = evaluate(challenge, [REPO / "reference" / "ssm_selective_scan.cu"], Options(**options), REPO)
    assert reference.passed, reference.message
    assert not reference.timing.escaped
    side = evaluate_one(challenge, "side_stream.cu", **options)
    assert side.reason == "timing_escape" and side.timing.escaped
    assert "outside the timer" in side.message


def test_wrong_solution_fails_timing_too(challenge):
    result = evaluate_one(challenge, "wrong_no_state.cu", check=False, budget=Budget(min_samples=3, time_s=0.5))
    assert result.reason == "wrong_output"
    assert result.timing is None
