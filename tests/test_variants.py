"""Independent solutions of each challenge, correct and typically wrong, judged
on both backends: tests/variants/<challenge>/*.cu, each opening with

    // expect: pass                 (or a reason of harness/results.py REASONS)
    // <why: the mistake it makes, or what makes it a fair correct solution>

They are what a learner writes first: a dropped tail, an exclusive scan for an
inclusive one, a softmax without the max shift, a lost atomic update. The
tolerance and the tests of a challenge are only as good as the wrong solutions
they reject and the correct ones they accept. (The threat model of the harness
itself, cheats included, is tests/corpus.)"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.results import REASONS
from harness.evaluation import evaluate_files
from harness.plan import Plan

REPO = Path(__file__).resolve().parents[1]
VARIANTS = REPO / "tests" / "variants"
EXPECT = re.compile(r"//\s*expect:\s*(\S+)")


def expected_verdict(path: Path) -> str:
    lines = path.read_text().splitlines()
    match = EXPECT.match(lines[0]) if lines else None
    assert match and len(lines) > 1 and lines[1].startswith("//"), f"{path}: line 1 '// expect: VERDICT', line 2 why"
    verdict = match.group(1)
    assert verdict in {*REASONS, "pass"} - {"not_run"}, f"{path}: unknown verdict {verdict!r}"
    return verdict


def challenges_with_variants() -> list[str]:
    return sorted(p.name for p in VARIANTS.iterdir() if p.is_dir() and any(p.glob("*.cu"))) if VARIANTS.is_dir() else []


def judge(name: str, backend: str) -> None:
    challenge = load_challenge(name, REPO)
    files = sorted((VARIANTS / name).glob("*.cu"))
    results = evaluate_files(challenge, files, Plan(backend=backend, time=False), REPO)
    assert len(results) == len(files)
    for path, result in zip(files, results):
        expected = expected_verdict(path)
        context = f"{path.name} on {backend}: {result.reason}: {result.message}"
        if expected == "pass":
            assert result.passed, context
        else:
            assert not result.passed and result.reason == expected, context


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")
@pytest.mark.parametrize("name", challenges_with_variants())
def test_variants_are_judged_as_they_say_on_emu(name):
    judge(name, "emu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", challenges_with_variants())
def test_variants_are_judged_as_they_say_on_cuda(name):
    judge(name, "cuda")
