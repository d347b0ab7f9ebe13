"""Both mamba3 references on emu with angles no functional test draws (|theta| past
2^17, up to 1e31): their fast sin and cos reduce an angle by 2 pi split in two floats,
which errs one way by 6.9e-15 rad per turn removed, so past 2^17 they must hand the
angle to sincosf (reference/mamba3_scan.md, "Sincos by the MUFU"). Without that
hand-over both fail at |theta| near 1e30 (measured: the forward's y 1732, the
backward's dx 951); with it every output stays near 0.001."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.backends.emu import build_emu_library
from harness.backends.emu.host import EmuRuntime
from harness.calls import CallSite, Verdict
from harness.challenge import load_challenge

REPO = Path(__file__).resolve().parents[1]
SIZES = {"batch": 1, "seq_len": 130, "n_heads": 2, "head_dim": 8, "d_state": 16}
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


def checked_call(name: str, inputs: dict[str, np.ndarray], cache: Path) -> Verdict:
    """reference/<name>.cu called once on emu the way the harness checks every call:
    guarded buffers, poisoned outputs, then the float64 oracle's outputs compared."""
    challenge = load_challenge(name, REPO)
    runtime = EmuRuntime()
    solve = runtime.load(build_emu_library(REPO / "reference" / f"{name}.cu", cache), challenge)
    site = CallSite(np, challenge, SIZES)
    site.load(inputs, challenge.reference_module.reference(inputs, SIZES))
    site.prepare()
    solve(site)
    runtime.check()
    return site.verify()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("emu")  # each reference built once for the module


@pytest.mark.parametrize("low, high", [(2e5, 1e6), (1e6, 1e9), (1e30, 1e31)])
@pytest.mark.parametrize("name", ["mamba3_scan", "mamba3_scan_backward"])
def test_reference_serves_angles_past_its_fast_reduction(name: str, low: float, high: float, cache: Path) -> None:
    rng = np.random.default_rng(7)
    inputs = load_challenge(name, REPO).reference_module.generate_inputs("moderate", SIZES, rng)
    shape = inputs["theta"].shape
    inputs["theta"] = (rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
    assert np.abs(inputs["theta"]).min() > 2.0**17
    verdict = checked_call(name, inputs, cache)
    assert verdict.passed, verdict.message
    worst = max(c.worst_ratio for c in verdict.comparisons)
    assert worst < 0.05, worst  # 0.0012 at most measured; the failures are over 900
