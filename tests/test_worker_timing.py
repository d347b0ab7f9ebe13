"""The timed loop of the child process, on the CPU: a fake runtime stands in
for CUDA (NumPy arrays, made-up times), so the rules that every timed call is
verified, that cached or counted work fails and that escaped work is flagged
are tested without a GPU."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from harness.backends.gpu_state import GpuState
from harness.challenge import load_challenge
from harness.plan import TimingJob
from harness.testdata import case_data_path
from harness.timing.loop import Budget, Sample
from harness.worker import EventLog, run_timing

REPO = Path(__file__).resolve().parents[1]
TIMED_TEST = "odd_sizes"  # a small case stands in for the performance size


class FakeRuntime:
    name = "fake"
    device_name = "fake device"
    xp = np
    error_types = (RuntimeError,)
    recheck_schedules = ()

    def __init__(self, gpu_s: float = 1e-4, wall_s: float = 1.2e-4, clocks_mhz: tuple[int, ...] = (1980,)):
        self.gpu_s, self.wall_s = gpu_s, wall_s
        self.clocks = list(clocks_mhz)

    def check(self) -> None:
        pass

    def timed_call(self, call, after_call=lambda: None) -> Sample:
        call()
        after_call()
        return Sample(gpu_time_s=self.gpu_s, wall_time_s=self.wall_s)

    def call_overhead(self) -> float:
        return 1e-5

    def gpu_state(self) -> GpuState:
        return GpuState(self.clocks.pop(0) if len(self.clocks) > 1 else self.clocks[0], 40, ())

    def copy_bandwidth(self) -> float:
        return 4e12


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


@pytest.fixture(scope="module")
def job(challenge):
    case = challenge.test(TIMED_TEST)
    data = tuple(str(case_data_path(challenge, case, v)) for v in range(3))
    return TimingJob(TIMED_TEST, data, Budget(min_samples=6, max_samples=50, time_s=1.0, min_time_s=0.0), "rse", limit_s=60.0)


def reference_solve(challenge):
    """A correct solution: the float64 reference on whatever the buffers hold."""

    def solve(site) -> None:
        inputs = {p.name: site.buffers[p.name].array.astype(np.float64) for p in challenge.inputs}
        site.buffers["y"].array[...] = challenge.reference_module.reference(inputs, site.sizes)["y"]

    return solve


def events(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


def run(challenge, job, tmp_path, solve, runtime=None) -> list[dict]:
    with open(tmp_path / "events.jsonl", "w") as file:
        run_timing(runtime or FakeRuntime(), solve, challenge, job, EventLog(os.dup(file.fileno())), tmp_path / "x.py")
    return events(tmp_path)


def test_honest_work_is_timed_and_every_call_checked(challenge, job, tmp_path):
    log = run(challenge, job, tmp_path, reference_solve(challenge))
    test = next(e["result"] for e in log if e["event"] == "test")
    timing = next(e["result"] for e in log if e["event"] == "timing")
    assert test["passed"] and test["calls"] > len(timing["gpu_time_s"])  # plus the warm-up calls
    assert [e["event"] for e in log][:2] == ["prepare", "start"]  # the checks rehearsed before the clock starts
    assert timing["clock_note"] is None and timing["gpu_state_before"]["sm_clock_mhz"] == 1980
    assert test["comparisons"][0]["worst_ratio"] < 1e-3
    assert timing["stop_reason"] == "converged" and len(timing["gpu_time_s"]) == 6
    assert not timing["escaped"] and timing["copy_bandwidth_bytes_per_s"] == 4e12


def test_replaying_the_first_answer_fails_on_the_next_data_set(challenge, job, tmp_path):
    honest = reference_solve(challenge)
    cached: dict[str, np.ndarray] = {}

    def replay(site) -> None:
        if not cached:
            honest(site)
            cached["y"] = site.buffers["y"].array.copy()
        site.buffers["y"].array[...] = cached["y"]

    test = next(e["result"] for e in run(challenge, job, tmp_path, replay) if e["event"] == "test")
    assert test["reason"] == "wrong_output" and test["message"].startswith("timed call 2:")


def test_work_outside_the_events_is_a_timing_escape(challenge, job, tmp_path):
    log = run(challenge, job, tmp_path, reference_solve(challenge), FakeRuntime(gpu_s=5e-6, wall_s=3e-3))
    test = next(e["result"] for e in log if e["event"] == "test")
    assert test["reason"] == "timing_escape" and "outside the timer" in test["message"]
    assert next(e["result"] for e in log if e["event"] == "timing")["escaped"]


def test_a_clock_that_moved_during_timing_is_noted(challenge, job, tmp_path):
    log = run(challenge, job, tmp_path, reference_solve(challenge), FakeRuntime(clocks_mhz=(1980, 1500)))
    timing = next(e["result"] for e in log if e["event"] == "timing")
    assert timing["clock_note"] == "SM clock 1980 -> 1500 MHz"


def test_a_thread_left_running_by_a_timed_call_ends_the_timing(challenge, job, tmp_path):
    honest, release, threads = reference_solve(challenge), threading.Event(), []

    def leaves_a_thread(site) -> None:
        honest(site)
        if len(threads) == 3:  # after the first calls: behaving differently later is no escape
            thread = threading.Thread(target=release.wait)
            thread.start()
            threads.append(thread)
        else:
            threads.append(None)

    try:
        log = run(challenge, job, tmp_path, leaves_a_thread)
    finally:
        release.set()
        [t.join() for t in threads if t]
    test = next(e["result"] for e in log if e["event"] == "test")
    assert test["reason"] == "host_work_escape" and "1 thread(s)" in test["message"]
    assert not any(e["event"] == "timing" for e in log)
