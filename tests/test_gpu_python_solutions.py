"""Python solutions on a real GPU: the CuPy RawModule and Triton solutions pass
and are timed like CUDA C ones; an exception and an NVRTC compile error become
verdicts with their place."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.evaluation import evaluate_files
from harness.plan import Plan
from harness.timing.loop import Budget

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions" / "ssm_selective_scan"
PARAMS = "u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state"
TIMED = dict(budget=Budget(min_samples=5, time_s=1.0), timeout_s=240.0)


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


@pytest.mark.timed
def test_cupy_rawmodule_solution_passes_and_is_timed(challenge):
    (result,) = evaluate_files(challenge, [SOLUTIONS / "cupy_warp_per_channel.py"], Plan(**TIMED), REPO)
    assert result.passed, result.message
    assert result.timing is not None and len(result.timing.gpu_time_s) >= 5 and not result.timing.escaped


@pytest.mark.timed
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_triton_solution_passes_and_is_timed(challenge):
    (result,) = evaluate_files(challenge, [SOLUTIONS / "triton_block_of_channels.py"], Plan(**TIMED), REPO)
    assert result.passed, result.message
    assert result.timing is not None and not result.timing.escaped


def test_exceptions_and_nvrtc_errors_are_verdicts(challenge, tmp_path):
    raises = tmp_path / "raises.py"
    raises.write_text(f"import cupy\n\ndef solve({PARAMS}):\n    raise ValueError('not today')\n")
    bad_kernel = tmp_path / "bad_kernel.py"
    bad_kernel.write_text(
        "import cupy as cp\n"
        "_k = cp.RawModule(code='extern \"C\" __global__ void k(float* y) { y[0] = undefined; }').get_function('k')\n"
        f"def solve({PARAMS}):\n    _k((1,), (1,), (y,))\n"
    )
    results = {Path(r.solution).name: r for r in evaluate_files(challenge, [raises, bad_kernel], Plan(time=False), REPO)}
    assert results["raises.py"].reason == "exception"
    assert "raises.py:4" in results["raises.py"].message and "not today" in results["raises.py"].message
    assert results["bad_kernel.py"].reason == "compile_error"
    assert "undefined" in results["bad_kernel.py"].message
