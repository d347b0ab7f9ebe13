"""The harness on the emu backend, CPU only: every solution in the repository
really runs against the functional tests on every commit; compile errors and
sanitizer findings point at file:line. Faulty solutions and the reason each
must get are the corpus's business (tests/test_corpus.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.runner import Options, discover_solutions, evaluate

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "corpus" / "ssm_selective_scan"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def test_every_repository_solution_passes_every_functional_test_on_emu(challenge):
    solutions = [p for p in discover_solutions(challenge, REPO) if p.suffix == ".cu"]  # .py needs a GPU
    results = evaluate(challenge, solutions, Options(backend="emu", time=False, timeout_s=240), REPO)
    assert len(results) == len(solutions)
    for result in results:
        assert result.passed, f"{result.solution}: {result.reason}: {result.message}"
        assert len(result.tests) == len(challenge.tests_of("example", "functional"))
        assert result.timing is None  # emu never reports a time


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
