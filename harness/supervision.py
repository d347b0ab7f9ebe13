"""One worker process per solution, watched from the harness: its job goes in
through the lifeline pipe, its events come back through another pipe, and it
is killed with everything it started when a test outlives its limit or the
run is cancelled. Its events and its way of ending become the result.

Nothing a solution does can take the harness down: crashes, CUDA errors,
hangs, exit() and floods of output all end as a SolutionResult with a reason.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import lifecycle, sanitizers
from .challenge import Challenge
from .plan import Job
from .results import Reason, SolutionResult, TestResult, TimingResult, test_result_from_dict

OUTPUT_TAIL_BYTES = 64 * 1024  # of the solution's stdout and stderr; the total is counted
TestStarted = Callable[[str, int, int], None]  # (test name, its number from 1, how many tests)


class _Tail:
    """Drains a pipe, keeping only its last bytes and a count of all of them."""

    def __init__(self, stream: Any):
        self.chunks: collections.deque[bytes] = collections.deque()
        self.kept = 0
        self.total = 0
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            self.total += len(chunk)
            self.chunks.append(chunk)
            self.kept += len(chunk)
            while self.kept - len(self.chunks[0]) >= OUTPUT_TAIL_BYTES:
                self.kept -= len(self.chunks.popleft())

    def text(self) -> str:
        self.thread.join(timeout=5)
        return b"".join(self.chunks)[-OUTPUT_TAIL_BYTES:].decode(errors="replace")


class _Events:
    """The worker's JSON events, one a line, read from a pipe as they come."""

    def __init__(self, fd: int):
        self.items: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                if not line.endswith(b"\n"):
                    break  # the worker died mid-line
                with contextlib.suppress(json.JSONDecodeError):
                    self.items.append(json.loads(line))

    def finish(self) -> list[dict[str, Any]]:
        self.thread.join(timeout=5)
        return list(self.items)


@dataclass
class Ending:
    """How the worker ended, as the parent saw it."""

    returncode: int | None = None
    timed_out_in: str | None = None  # the test that outlived its limit ("" at start-up)
    limit_s: float = 0.0
    interrupted: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


# A worker's own NumPy work (loading data, the checks) gains nothing from BLAS
# threads, and OpenBLAS's threads spin after each call: 9 % of an emu check's
# CPU time under perf, taken from the solution on the same cores. Defaults: a
# user's own setting wins.
QUIET_MATH_LIBRARIES = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_child(
    challenge: Challenge,
    job: Job,
    label: str,
    *,
    prefix: list[str] | None = None,
    env: dict[str, str] | None = None,
    gpu: int = 0,
    on_test: TestStarted | None = None,
    sanitized: bool = False,
    fifo_dir: Path | None = None,
) -> SolutionResult:
    """Run the job in a worker; the result keeps every test it finished. With
    `fifo_dir` the job and the events travel through named pipes made there,
    for launchers (compute-sanitizer) that do not pass open descriptors on."""
    result = SolutionResult(solution=label, backend=job.backend)
    started = time.perf_counter()
    child_env = {**QUIET_MATH_LIBRARIES, **os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "PYTHONUNBUFFERED": "1", **(env or {})}
    channel = _FifoChannel(fifo_dir) if fifo_dir else _PipeChannel()
    try:
        child = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "harness.worker", *channel.worker_args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            pass_fds=channel.inherited,
            start_new_session=True,  # its own process group: killing it kills everything it started
        )
    finally:
        channel.after_start()
    stdout, stderr = _Tail(child.stdout), _Tail(child.stderr)
    try:
        lifeline = channel.connect(child, job.startup_limit_s)
        events = _Events(channel.events_read)
        if lifeline is not None:
            with contextlib.suppress(BrokenPipeError):
                os.write(lifeline, job.to_json().encode() + b"\n")
        if lifeline is not None:
            ending = _watch(child, job, events, on_test)
        elif lifecycle.active().is_set:
            ending = Ending(interrupted=True)
        elif child.poll() is None:
            ending = Ending(timed_out_in="", limit_s=job.startup_limit_s)
        else:
            ending = Ending()  # it ended before reading its job: interpret says how
    finally:
        lifecycle.kill_group(child)  # whatever the solution left running in its group
        child.wait()
        channel.close()
    ending.returncode = child.returncode
    ending.events = events.finish()
    result.stdout_tail, result.stdout_bytes, result.stderr_tail = stdout.text(), stdout.total, stderr.text()
    result.duration_s = time.perf_counter() - started
    return interpret(challenge, result, ending, job, sanitized)


class _PipeChannel:
    """Anonymous pipes whose ends the worker inherits (the usual way)."""

    def __init__(self) -> None:
        self.events_read, self._events_write = os.pipe()
        self._lifeline_read, self._lifeline_write = os.pipe()
        self.worker_args = [str(self._events_write), str(self._lifeline_read)]
        self.inherited = (self._events_write, self._lifeline_read)

    def after_start(self) -> None:
        os.close(self._events_write)
        os.close(self._lifeline_read)

    def connect(self, child: subprocess.Popen[bytes], limit_s: float) -> int | None:
        return self._lifeline_write

    def close(self) -> None:
        os.close(self._lifeline_write)


class _FifoChannel:
    """Named pipes in a private folder: the worker opens them by path. The
    harness holds a write end of the events pipe itself until the worker has
    ended, so reading it waits for the worker instead of ending at once."""

    def __init__(self, folder: Path):
        self.events_path, self.lifeline_path = folder / "events", folder / "lifeline"
        os.mkfifo(self.events_path, 0o600)
        os.mkfifo(self.lifeline_path, 0o600)
        self.events_read = os.open(self.events_path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(self.events_read, True)
        self._events_hold = os.open(self.events_path, os.O_WRONLY)
        self._lifeline: int | None = None
        self.worker_args = ["--fifo", str(folder)]
        self.inherited: tuple[int, ...] = ()

    def after_start(self) -> None:
        pass

    def connect(self, child: subprocess.Popen[bytes], limit_s: float) -> int | None:
        """The lifeline's write end, once the worker has opened its read end;
        None if the worker ended or the start-up limit passed first."""
        deadline = time.monotonic() + limit_s
        while child.poll() is None and time.monotonic() < deadline and not lifecycle.active().is_set:
            try:
                self._lifeline = os.open(self.lifeline_path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                time.sleep(0.02)
                continue
            os.set_blocking(self._lifeline, True)
            return self._lifeline
        return None

    def close(self) -> None:
        os.close(self._events_hold)  # the reader now sees the end of the worker's events
        if self._lifeline is not None:
            os.close(self._lifeline)


def _watch(child: subprocess.Popen[bytes], job: Job, events: _Events, on_test: TestStarted | None) -> Ending:
    """Wait for the worker, holding each test to its limit from its start event."""
    cancellation = lifecycle.active()
    names = job.test_names
    seen = 0
    current, deadline, limit = "", time.monotonic() + job.startup_limit_s, job.startup_limit_s
    while child.poll() is None:
        for event in events.items[seen:]:
            seen += 1
            if event["event"] == "prepare":  # the harness's own checks, rehearsed: not the solution's time
                current, limit = f"preparing {event['test']}", job.startup_limit_s
                deadline = time.monotonic() + limit
            elif event["event"] == "start":
                current, limit = event["test"], job.limit_of(event["test"])
                deadline = time.monotonic() + limit
                if on_test:
                    on_test(current, names.index(current) + 1, len(names))
        if cancellation.is_set:
            lifecycle.kill_group(child)
            return Ending(interrupted=True)
        if time.monotonic() > deadline:
            lifecycle.kill_group(child)
            return Ending(timed_out_in=current, limit_s=limit)
        cancellation.wait(lifecycle.POLL_S)
    return Ending()


def interpret(challenge: Challenge, result: SolutionResult, ending: Ending, job: Job, sanitized: bool = False) -> SolutionResult:
    """Turn the worker's events and its way of ending into a result."""
    in_progress: str | None = None
    finished = ready = False
    for event in ending.events:
        kind = event["event"]
        if kind == "ready":
            ready = True
        elif kind == "start":
            in_progress = event["test"]
        elif kind == "test":
            result.tests.append(test_result_from_dict(event["result"]))
            in_progress = None
        elif kind == "timing":
            result.timing = TimingResult.from_dict(event["result"])
        elif kind == "error":
            return result.fail(Reason(event["reason"]), event["message"])
        elif kind == "fatal":
            return result.fail(Reason.INTERNAL_ERROR, "the harness worker failed: " + event["message"])
        elif kind == "done":
            finished = True
    where = f" during test {in_progress}" if in_progress else ""
    sanitizer = sanitizers.asan_summary(result.stderr_tail)
    returncode = ending.returncode or 0
    if ending.interrupted:
        _record_abort(challenge, result, in_progress, Reason.INTERRUPTED, f"the run was interrupted{where}")
    elif sanitizer and not finished:
        _record_abort(challenge, result, in_progress, Reason.SANITIZER, sanitizer + where)
    elif ending.timed_out_in is not None:
        what = (
            f"while {ending.timed_out_in} (the harness's checks, before the solution's clock)" if ending.timed_out_in.startswith("preparing ")
            else f"during test {ending.timed_out_in}" if ending.timed_out_in else "while starting (loading the solution)"
        )
        why = "set by --timeout" if job.fixed_limits else "the limit for its size; --timeout overrides it"
        _record_abort(challenge, result, in_progress, Reason.TIMEOUT, f"no result within {ending.limit_s:g} s {what} ({why})")
    elif not finished and not ready:
        _record_abort(challenge, result, None, Reason.INTERNAL_ERROR,
                      f"the harness worker ended with status {returncode} before loading the solution: {_last_line(result.stderr_tail)}")
    elif not finished:
        if returncode < 0:
            name = signal.Signals(-returncode).name if -returncode in signal.Signals._value2member_map_ else str(-returncode)
            hint = "" if sanitized or name not in ("SIGSEGV", "SIGBUS") else " (a bad memory access: rerun with --sanitize to find it)"
            _record_abort(challenge, result, in_progress, Reason.CRASH, f"the process was killed by {name}{where}{hint}")
        else:
            _record_abort(challenge, result, in_progress, Reason.EXITED, f"the process ended with status {returncode}{where} before finishing")
    seen = {t.name for t in result.tests}
    for name in job.test_names:
        if name not in seen:
            case = challenge.test(name)
            message = "the run was interrupted" if ending.interrupted else "an earlier failure ended the run"
            result.tests.append(TestResult(name, case.kind, case.sizes, passed=False, reason=Reason.NOT_RUN, message=message))
    failed = next((t for t in result.tests if not t.passed and t.reason != Reason.NOT_RUN), None)
    if failed is not None and result.reason is None:
        return result.fail(failed.reason or Reason.WRONG_OUTPUT, f"{failed.name}: {failed.message}")
    if result.reason is None:
        result.passed = True
    return result


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _record_abort(challenge: Challenge, result: SolutionResult, test: str | None, reason: Reason, message: str) -> None:
    if test is not None:
        case = challenge.test(test)
        result.tests.append(TestResult(test, case.kind, case.sizes, passed=False, reason=reason, message=message))
    else:
        result.fail(reason, message)
