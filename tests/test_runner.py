"""How the parent turns a child's event log and its way of ending into a
result: crashes, exits and timeouts keep every result already reported."""

from __future__ import annotations

import io
import signal
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.results import SolutionResult, TestResult
from harness.runner import OUTPUT_TAIL_BYTES, Options, _Tail, discover_solutions, interpret, prepare_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def planned(challenge):
    return [{"name": t.name, "data": []} for t in challenge.tests_of("example", "functional")]


def passed_event(challenge, name):
    case = challenge.test(name)
    return {"event": "test", "result": asdict(TestResult(name, case.kind, case.sizes, True, calls=1))}


def fresh() -> SolutionResult:
    return SolutionResult(solution="x.cu", backend="cuda")


def test_a_clean_run_passes(challenge):
    tests = planned(challenge)
    events = [passed_event(challenge, t["name"]) for t in tests] + [{"event": "done"}]
    result = interpret(challenge, fresh(), events, 0, False, Options(time=False), tests, None)
    assert result.passed and len(result.tests) == len(tests)


def test_a_crash_names_the_signal_and_the_test_and_keeps_earlier_results(challenge):
    tests = planned(challenge)
    events = [passed_event(challenge, tests[0]["name"]), {"event": "start", "test": tests[1]["name"]}]
    result = interpret(challenge, fresh(), events, -signal.SIGSEGV, False, Options(time=False), tests, None)
    assert not result.passed and result.reason == "crash"
    assert "SIGSEGV" in result.message and tests[1]["name"] in result.message
    assert result.tests[0].passed
    assert [t.reason for t in result.tests[2:]] == ["not_run"] * (len(tests) - 2)


def test_exit_inside_solve_is_reported_even_with_status_zero(challenge):
    tests = planned(challenge)
    result = interpret(challenge, fresh(), [{"event": "start", "test": tests[0]["name"]}], 0, False, Options(time=False), tests, None)
    assert result.reason == "exited" and "status 0" in result.message


def test_a_timeout_names_the_test(challenge):
    tests = planned(challenge)
    events = [{"event": "start", "test": tests[0]["name"]}]
    result = interpret(challenge, fresh(), events, -signal.SIGKILL, True, Options(time=False, timeout_s=7), tests, None)
    assert result.reason == "timeout" and "7 s" in result.message and tests[0]["name"] in result.message


def test_a_load_error_is_the_verdict(challenge):
    events = [{"event": "error", "reason": "missing_symbol", "message": "no solve"}]
    result = interpret(challenge, fresh(), events, 0, False, Options(time=False), planned(challenge), None)
    assert result.reason == "missing_symbol"


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
    tests, timing = prepare_data(challenge, Options(time=False, repeat_calls=4))
    first_functional = challenge.tests_of("functional")[0].name
    by_name = {t["name"]: t["data"] for t in tests}
    assert len(by_name[first_functional]) == 4 and len(set(by_name[first_functional])) == 4
    assert all(len(v) == 1 for k, v in by_name.items() if k != first_functional)
    assert timing is None
