"""The harness and its children end together: Ctrl-C, SIGTERM and SIGHUP stop
a run within seconds and report what finished; SIGKILL of the harness leaves
no worker and no temporary folder behind; a hung solution fails in seconds
under the limit derived from the test's size. Real processes on emu, with a
solution that spins in C (tests/corpus/ssm_selective_scan/hang.cu)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import document
from harness.errors import ExitCode
from harness.lifecycle import Cancellation, cancelling, run_process, Cancelled

REPO = Path(__file__).resolve().parents[1]
HANG = REPO / "tests" / "corpus" / "ssm_selective_scan" / "hang.cu"
NAIVE = REPO / "solutions" / "ssm_selective_scan" / "naive.cu"
STOP_WITHIN_S = 3.0
pytestmark = pytest.mark.skipif(shutil.which("g++") is None or not sys.platform.startswith("linux"), reason="needs g++ and Linux /proc")


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def start_harness(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """`harness check` of the hang and a passing solution on emu, in its own
    session, with a private TMPDIR to look for leftovers in."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), COLUMNS="100")
    command = [sys.executable, "-c", "from harness.cli import main; main()", "check", "ssm_selective_scan",
               str(NAIVE), str(HANG), "--backend", "emu", "--json", *args]
    harness = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    return harness, scratch


def worker_pids(harness: subprocess.Popen[str]) -> set[int]:
    """Once a worker has loaded the hang's library (after the passing
    solution finished): every process below the harness."""
    deadline = time.monotonic() + 120  # building both on a cold cache
    while time.monotonic() < deadline:
        for pid in descendants(harness.pid):
            try:
                if b"harness.worker" in Path(f"/proc/{pid}/cmdline").read_bytes() and "hang" in Path(f"/proc/{pid}/maps").read_text():
                    time.sleep(0.3)  # into solve()
                    return descendants(harness.pid)
            except OSError:
                continue
        assert harness.poll() is None, harness.communicate()
        time.sleep(0.05)
    raise AssertionError("no worker started")


def assert_nothing_left(processes: set[int], scratch: Path) -> None:
    deadline = time.monotonic() + STOP_WITHIN_S
    while any(alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in processes if alive(pid)], "a child of the harness outlived it"
    assert not list(scratch.iterdir()), f"left behind: {list(scratch.iterdir())}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_stops_the_run_reports_what_finished_and_leaves_nothing(tmp_path, signum):
    harness, scratch = start_harness(tmp_path, "--timeout", "120")
    processes = worker_pids(harness)
    sent = time.monotonic()
    harness.send_signal(signum)
    out, err = harness.communicate(timeout=30)
    assert time.monotonic() - sent < STOP_WITHIN_S, err
    assert harness.returncode == 128 + signum == (ExitCode.INTERRUPTED if signum == signal.SIGINT else harness.returncode)
    report = json.loads(out)
    verdicts = {Path(r["solution"]).name: r["reason"] for r in report["results"]}
    assert verdicts == {"naive.cu": None, "hang.cu": "interrupted"}, err
    assert report["interrupted"] and not report["passed"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, json.loads(document.SCHEMA_PATH.read_text()))
    assert_nothing_left(processes, scratch)


def test_sigkill_of_the_harness_takes_its_workers_with_it(tmp_path):
    harness, scratch = start_harness(tmp_path, "--timeout", "120")
    processes = worker_pids(harness)
    assert processes, "the worker is running"
    harness.kill()
    harness.communicate(timeout=30)
    assert_nothing_left(processes, scratch)


def test_a_hung_solution_fails_in_seconds_under_the_limit_for_its_size(tmp_path):
    harness, scratch = start_harness(tmp_path)
    started = time.monotonic()
    out, err = harness.communicate(timeout=120)
    assert harness.returncode == ExitCode.FAILED, err
    hang = next(r for r in json.loads(out)["results"] if r["solution"].endswith("hang.cu"))
    assert hang["reason"] == "timeout"
    assert "during test example (the limit for its size; --timeout overrides it)" in hang["message"]
    limit = float(hang["message"].split("no result within ")[1].split(" s")[0])
    assert limit <= 10 and time.monotonic() - started < 60
    assert not list(scratch.iterdir())


def test_a_cancelled_tool_is_killed_at_once():
    cancellation = Cancellation()
    with cancelling(cancellation):
        cancellation.cancel()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            run_process(["sleep", "30"], timeout_s=60)
    assert time.monotonic() - started < 2
