"""How the parent turns a worker's events and its way of ending into a
result: crashes, exits, timeouts and interruptions keep every result already
reported; a failure of the worker itself is not blamed on the solution."""

from __future__ import annotations

import io
import signal
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.backends import Backend
from harness.challenge import load_challenge
from harness.discovery import discover_solutions
from harness.plan import Job, Plan, TestJob, solution_job
from harness.results import SolutionResult, TestResult
from harness.supervision import OUTPUT_TAIL_BYTES, Ending, _Tail, interpret
from harness.testdata import prepare_jobs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def planned(challenge, plan: Plan | None = None) -> Job:
    tests = tuple(TestJob(t.name, (), 10.0) for t in challenge.tests_of("example", "functional"))
    return solution_job(challenge, REPO, Path("x.cu"), Path("x.so"), plan or Plan(time=False), tests, None)


def ended(events, returncode=0, **how) -> Ending:
    return Ending(returncode=returncode, events=[{"event": "ready"}, *events], **how)


def passed_event(challenge, name):
    case = challenge.test(name)
    return {"event": "test", "result": asdict(TestResult(name, case.kind, case.sizes, True, calls=1))}


def fresh() -> SolutionResult:
    return SolutionResult(solution="x.cu", backend="cuda")


def test_a_clean_run_passes(challenge):
    job = planned(challenge)
    events = [passed_event(challenge, name) for name in job.test_names] + [{"event": "done"}]
    result = interpret(challenge, fresh(), ended(events), job)
    assert result.passed and len(result.tests) == len(job.tests)


def test_a_crash_names_the_signal_and_the_test_keeps_earlier_results_and_suggests_sanitize(challenge):
    job = planned(challenge)
    names = job.test_names
    events = [passed_event(challenge, names[0]), {"event": "start", "test": names[1]}]
    result = interpret(challenge, fresh(), ended(events, -signal.SIGSEGV), job)
    assert not result.passed and result.reason == "crash"
    assert "SIGSEGV" in result.message and names[1] in result.message and "--sanitize" in result.message
    assert result.tests[0].passed
    assert [t.reason for t in result.tests[2:]] == ["not_run"] * (len(names) - 2)
    sanitized = interpret(challenge, fresh(), ended(events, -signal.SIGSEGV), job, sanitized=True)
    assert "--sanitize" not in sanitized.message


def test_exit_inside_solve_is_reported_even_with_status_zero(challenge):
    job = planned(challenge)
    result = interpret(challenge, fresh(), ended([{"event": "start", "test": job.test_names[0]}]), job)
    assert result.reason == "exited" and "status 0" in result.message


def test_a_timeout_names_the_test_and_its_limit(challenge):
    job = planned(challenge, Plan(time=False, timeout_s=7))
    events = [{"event": "start", "test": job.test_names[0]}]
    result = interpret(challenge, fresh(), ended(events, -signal.SIGKILL, timed_out_in=job.test_names[0], limit_s=7), job)
    assert result.reason == "timeout" and "7 s" in result.message and job.test_names[0] in result.message
    assert "--timeout" in result.message


def test_an_interrupted_run_keeps_what_finished_and_marks_the_rest(challenge):
    job = planned(challenge)
    names = job.test_names
    events = [passed_event(challenge, names[0]), {"event": "start", "test": names[1]}]
    result = interpret(challenge, fresh(), ended(events, -signal.SIGKILL, interrupted=True), job)
    assert result.reason == "interrupted" and result.tests[0].passed
    assert result.tests[1].reason == "interrupted" and result.tests[2].reason == "not_run"


def test_a_worker_that_fails_before_loading_the_solution_is_an_internal_error(challenge):
    job = planned(challenge)
    crashed = Ending(returncode=1, events=[])
    result = fresh()
    result.stderr_tail = "Traceback ...\nImportError: no module named numpy\n"
    judged = interpret(challenge, result, crashed, job)
    assert judged.reason == "internal_error" and "ImportError" in judged.message
    fatal = interpret(challenge, fresh(), ended([{"event": "fatal", "message": "KeyError: 'x'"}], 1), job)
    assert fatal.reason == "internal_error"


def test_a_load_error_is_the_verdict(challenge):
    events = [{"event": "error", "reason": "missing_symbol", "message": "no solve"}]
    result = interpret(challenge, fresh(), ended(events), planned(challenge))
    assert result.reason == "missing_symbol"


def test_the_job_crosses_into_the_worker_unchanged(challenge):
    plan = Plan(backend=Backend.EMU, time=False)
    tests, timing = prepare_jobs(challenge, plan)
    job = solution_job(challenge, REPO, Path("x.cu"), Path("x.so"), plan, tests, timing)
    assert Job.from_json(job.to_json()) == job


def test_output_tail_keeps_the_end_and_counts_everything():
    flood = b"".join(b'{"fake": %d}\n' % i for i in range(100000))
    tail = _Tail(io.BufferedReader(io.BytesIO(flood)))
    text = tail.text()
    assert tail.total == len(flood)
    assert text.endswith('{"fake": 99999}\n') and len(text) <= OUTPUT_TAIL_BYTES


def test_discovery_lists_solutions_then_the_reference(challenge):
    found = discover_solutions(challenge, REPO)
    assert found[-1] == REPO / "reference" / "ssm_selective_scan.cu"
    assert REPO / "solutions" / "ssm_selective_scan" / "naive.cu" in found


def test_prepared_data_repeats_the_first_functional_test_on_fresh_inputs(challenge):
    tests, timing = prepare_jobs(challenge, Plan(time=False, repeat_calls=4))
    first_functional = challenge.tests_of("functional")[0].name
    by_name = {t.name: t.data for t in tests}
    assert len(by_name[first_functional]) == 4 and len(set(by_name[first_functional])) == 4
    assert all(len(v) == 1 for k, v in by_name.items() if k != first_functional)
    assert timing is None


def test_named_pipes_carry_the_job_through_a_launcher_that_closes_inherited_descriptors(challenge, tmp_path):
    """compute-sanitizer passes no open descriptors on to the program it runs:
    `fifo_dir` carries the job and the events by path instead."""
    from harness.builds import build_library
    from harness.supervision import run_child

    plan = Plan(backend="emu", time=False, only_test="example")
    solution = REPO / "tests" / "corpus" / "ssm_selective_scan" / "correct_sequential.cu"
    job = solution_job(challenge, REPO, solution, build_library(solution, plan), plan, *prepare_jobs(challenge, plan))
    closes = [sys.executable, "-c", "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])"]
    result = run_child(challenge, job, "correct_sequential.cu", prefix=closes, fifo_dir=tmp_path)
    assert result.passed and [t.name for t in result.tests] == ["example"], result.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events", "lifeline"]
