"""The harness on the emu backend, CPU only: every solution in the repository
really runs against the functional tests on every commit, and faulty ones fail
for the right reason without taking the run down."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.runner import Options, discover_solutions, evaluate

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "cuda_solutions"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def test_every_repository_solution_passes_every_functional_test_on_emu(challenge):
    solutions = discover_solutions(challenge, REPO)
    results = evaluate(challenge, solutions, Options(backend="emu", time=False, timeout_s=240), REPO)
    assert len(results) == len(solutions)
    for result in results:
        assert result.passed, f"{result.solution}: {result.reason}: {result.message}"
        assert len(result.tests) == len(challenge.tests_of("example", "functional"))
        assert result.timing is None  # emu never reports a time


def test_faulty_solutions_fail_for_the_right_reason_on_emu(challenge):
    expected = {
        "wrong_no_state.cu": "wrong_output",
        "out_of_bounds.cu": "out_of_bounds_write",
        "host_crash.cu": "crash",
        "illegal_address.cu": "crash",  # on a CPU a wild write is a segfault, not a CUDA error
        "exit_in_solve.cu": "exited",
        "race_no_barrier.cu": "race",
        "hang.cu": "timeout",
        "stdout_flood.cu": None,
        "correct_sequential.cu": None,
    }
    results = evaluate(challenge, [FIXTURES / name for name in expected], Options(backend="emu", time=False, timeout_s=20), REPO)
    assert {Path(r.solution).name: r.reason for r in results} == expected
    race = next(r for r in results if r.solution.endswith("race_no_barrier.cu"))
    assert "reverse order" in race.message


def test_a_compile_error_is_reported_with_file_and_line(challenge, tmp_path):
    broken = tmp_path / "broken.cu"
    text = (FIXTURES / "correct_sequential.cu").read_text().replace("acc += C", "acc += undefined_thing * C")
    broken.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "undefined_thing" in l)
    (result,) = evaluate(challenge, [broken], Options(backend="emu", time=False), REPO)
    assert result.reason == "compile_error"
    assert f"broken.cu:{line}:" in result.message


def test_sanitize_reports_a_write_far_past_the_guards_with_file_and_line(challenge, tmp_path):
    text = (FIXTURES / "out_of_bounds.cu").read_text().replace("d_model + 3]", "d_model + 100000]")
    far = tmp_path / "far.cu"
    far.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "100000" in l)
    (result,) = evaluate(challenge, [far], Options(backend="emu", time=False, sanitize=True), REPO)
    assert result.reason == "sanitizer"
    assert f"far.cu:{line}" in result.message and "block (0,0,0)" in result.message
