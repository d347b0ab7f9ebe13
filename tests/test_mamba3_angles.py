"""Both mamba3 references, on emu and on the GPU, with angles no functional test draws (|theta| past
2^17, up to 1e31): their fast sin and cos reduce an angle by 2 pi split in two floats,
which errs one way by 6.9e-15 rad per turn removed, so past 2^17 they must hand the
angle to sincosf (reference/mamba3_scan.md, "Sincos by the MUFU"). Without that
hand-over both fail at |theta| near 1e30 (measured on emu: the forward's y 1732,
the backward's dx 951); with it every output stays near 0.001. On the GPU the
fast path's sin and cos are the MUFU's, not emu's, so both backends run."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.builds import build_library
from harness.calls import CallSite, Verdict
from harness.challenge import load_challenge
from harness.plan import Plan
from harness.worker import make_runtime

REPO = Path(__file__).resolve().parents[1]
SIZES = {"batch": 1, "seq_len": 130, "n_heads": 2, "head_dim": 8, "d_state": 16}
BACKENDS = [
    pytest.param("emu", marks=pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")),
    pytest.param("cuda", marks=pytest.mark.gpu),
]


def checked_call(backend: str, name: str, inputs: dict[str, np.ndarray]) -> Verdict:
    """reference/<name>.cu built and called once the way the harness checks every
    call: guarded buffers, poisoned outputs, then the float64 oracle's outputs compared."""
    challenge = load_challenge(name, REPO)
    plan = Plan(backend=backend)
    runtime = make_runtime(plan.backend)
    solve = runtime.load(build_library(REPO / "reference" / f"{name}.cu", plan), challenge)
    site = CallSite(runtime.xp, challenge, SIZES)
    site.load(inputs, challenge.reference_module.reference(inputs, SIZES))
    site.prepare()
    solve(site)
    runtime.check()
    return site.verify()


@pytest.mark.parametrize("low, high", [(2e5, 1e6), (1e6, 1e9), (1e30, 1e31)])
@pytest.mark.parametrize("name", ["mamba3_scan", "mamba3_scan_backward"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_reference_serves_angles_past_its_fast_reduction(backend: str, name: str, low: float, high: float) -> None:
    rng = np.random.default_rng(7)
    inputs = load_challenge(name, REPO).reference_module.generate_inputs("moderate", SIZES, rng)
    shape = inputs["theta"].shape
    inputs["theta"] = (rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
    assert np.abs(inputs["theta"]).min() > 2.0**17
    verdict = checked_call(backend, name, inputs)
    assert verdict.passed, verdict.message
    worst = max(c.worst_ratio for c in verdict.comparisons)
    assert worst < 0.05, worst  # 0.0012 at most measured on emu; the failures are over 900
