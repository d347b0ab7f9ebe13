"""Timing in rounds (`--rounds N`), without a GPU: the plan shares the budget
out, the lanes alternate solutions and baseline round by round, each later
round is a timing-only run, and the rounds' samples make one measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import evaluation
from harness.backends import Backend
from harness.challenge import load_challenge
from harness.grading import Item
from harness.lifecycle import Cancellation
from harness.plan import make_plan
from harness.results import Reason, SolutionResult
from harness.rounds import merged
from report_support import timed_result

REPO = Path(__file__).resolve().parents[1]


def test_rounds_share_out_the_budget_and_only_where_something_is_timed():
    notes: list[str] = []
    plan = make_plan(Backend.CUDA, check=True, time=True, given={"rounds": 4, "budget_s": 2.0}, notes=notes)
    assert plan.timing_rounds == 4 and plan.budget.time_s == pytest.approx(0.5)
    emu = make_plan(Backend.EMU, check=True, time=True, given={"rounds": 4}, notes=notes)
    assert emu.timing_rounds == 1
    assert make_plan(Backend.CUDA, check=True, time=True, given={}, notes=notes).timing_rounds == 1


def test_a_later_round_adds_its_samples_and_keeps_the_tests():
    first = timed_result("a.cu", 100e-6, 0.01, 7, seed=1)
    later = timed_result("a.cu", 120e-6, 0.01, 5, seed=2)
    later.tests = []
    result = merged(first, later, 2)
    assert result.passed and result.tests == first.tests
    assert result.timing.gpu_time_s == first.timing.gpu_time_s + later.timing.gpu_time_s
    assert len(result.timing.wall_time_s) == 12
    assert result.duration_s == first.duration_s + later.duration_s
    assert first.timing.gpu_time_s != result.timing.gpu_time_s  # the first round's result is not modified


def test_a_failed_round_fails_the_solution_and_says_which():
    first = timed_result("a.cu", 100e-6, 0.01, 7, seed=1)
    later = SolutionResult(solution="a.cu", backend="cuda").fail(Reason.WRONG_OUTPUT, "timed call 3: y: 1 of 8 elements out of tolerance")
    result = merged(first, later, 3)
    assert not result.passed and result.reason == Reason.WRONG_OUTPUT
    assert result.message == "timing round 3: timed call 3: y: 1 of 8 elements out of tolerance"
    assert first.passed


def test_solutions_and_baseline_take_turns_and_later_rounds_only_time(monkeypatch):
    challenge = load_challenge("ssm_selective_scan", REPO)
    items = [Item.of(challenge.name, REPO / "solutions" / "ssm_selective_scan" / f"{n}.cu", REPO) for n in ("naive", "thread_per_channel")]
    items.append(Item.of(challenge.name, REPO / "reference" / "ssm_selective_scan.cu", REPO, baseline=True))
    plan = make_plan(Backend.CUDA, check=True, time=True, given={"rounds": 3}, notes=[])
    calls: list[tuple[str, bool, int]] = []

    def fake_run_built(challenge, path, label, built, plan, root, jobs, gpu, on_test=None):
        tests, timing = jobs
        calls.append((path.name, plan.check, len(tests)))
        if path.name == "naive.cu" and not plan.check and sum(1 for c in calls if c[0] == "naive.cu") == 3:
            return SolutionResult(solution=label, backend="cuda").fail(Reason.TIMING_ESCAPE, "work runs outside the timer")
        return timed_result(label, 100e-6, 0.01, 5, seed=len(calls))

    monkeypatch.setattr(evaluation, "run_built", fake_run_built)
    jobs = {challenge.name: (("test-job",), "timing-job")}
    built = {(i.challenge, i.path): Path("lib.so") for i in items}
    graded = evaluation._run_items({challenge.name: challenge}, items, built, plan, REPO, jobs, lambda text: None, Cancellation())
    assert calls == [
        ("naive.cu", True, 1), ("thread_per_channel.cu", True, 1), ("ssm_selective_scan.cu", True, 1),
        ("naive.cu", False, 0), ("thread_per_channel.cu", False, 0), ("ssm_selective_scan.cu", False, 0),
        ("naive.cu", False, 0), ("thread_per_channel.cu", False, 0), ("ssm_selective_scan.cu", False, 0),
    ]
    results = {g.item.path.name: g.result for g in graded}
    assert len(results["thread_per_channel.cu"].timing.gpu_time_s) == 15
    assert results["naive.cu"].reason == Reason.TIMING_ESCAPE and results["naive.cu"].message.startswith("timing round 3: ")
