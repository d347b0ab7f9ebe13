"""The child process that runs one solution: `python -m harness.worker EVENTS_FD LIFELINE_FD`.

It reads its Job (one JSON line) from the lifeline pipe, which it then watches
to die with the harness (lifecycle.die_with_parent). It loads the solution (a
built library or a Python file), runs the requested tests and the timing, and
writes one JSON event per line to the events pipe as it goes, so that when it
crashes, hangs or exits the parent still knows which test it was in and keeps
every result already written. The solution may print anything on stdout and
stderr: the parent keeps their tails.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from collections.abc import Callable
from typing import Any, cast

from . import host_activity
from .backends import Backend, Runtime, ScheduledRuntime, TimingRuntime
from .backends.gpu_state import clock_moved
from .backends.python_solution import exception_reason
from .calls import CallSite, Verdict
from .validation import Comparison
from .challenge import Challenge, load_challenge
from .errors import SolutionError
from .lifecycle import die_with_parent
from .plan import Job, TestJob, TimingJob
from .results import Reason, TestResult, TimingResult
from .stats import summarize
from .testdata import load_case_data
from .timing.criteria import make_criterion
from .timing.loop import Sample, measure

# A timed median this much above the events' median, beyond the cost of an
# empty call, means work ran outside the timed stream (side stream, host thread).
# The absolute part is measured: on an H200 the honest ssm reference took
# 224.0 us of wall time against 108.8 us of events and a 64.5 us empty call,
# 51 us beyond both once the wall clock stopped at the synchronise; the
# escapes in the corpus run milliseconds outside the timer.
ESCAPE_RELATIVE = 0.25
ESCAPE_ABSOLUTE_S = 100e-6

# Timing starts once the GPU has run the solution this long: its clock ramps up
# from idle (345 MHz measured on an idle H200) within milliseconds of load.
WARMUP_S = 0.2

Solve = Callable[[CallSite], None]  # calls the solution's solve() for a call site


class HostWorkEscaped(Exception):
    """solve() returned with a thread or child process it started still running."""

    reason = Reason.HOST_WORK_ESCAPE


class ReturnCheck:
    """One call of solve() held to the rule that it leaves no thread or child
    process running: made before the call (off the timer), `call` makes it,
    then calling the check raises HostWorkEscaped if something it started was
    still running at its return."""

    def __init__(self) -> None:
        self.watch = host_activity.WatchedCall()

    def call(self, solve: Solve, site: CallSite) -> None:
        self.watch.started()
        try:
            solve(site)
        finally:
            self.watch.returned()

    def __call__(self) -> None:
        escaped = self.watch.escaped()
        if escaped:
            raise HostWorkEscaped(escaped)


def guarded(solve: Solve) -> Solve:
    """solve(), held to the rule that it leaves no thread or child process running."""

    def call(site: CallSite) -> None:
        check = ReturnCheck()
        check.call(solve, site)
        check()

    return call


class EventLog:
    def __init__(self, fd: int):
        self.file = os.fdopen(fd, "w", buffering=1)

    def emit(self, event: str, **fields: Any) -> None:
        self.file.write(json.dumps({"event": event, **fields}) + "\n")
        self.file.flush()


def make_runtime(backend: Backend, unpooled: bool = False) -> Runtime:
    if backend == Backend.CUDA:
        from .backends.cuda import CudaRuntime

        return CudaRuntime(unpooled=unpooled)
    from .backends.emu.host import EmuRuntime

    return EmuRuntime()


def run_tests(
    runtime: Runtime, solve: Solve, challenge: Challenge, cases: tuple[TestJob, ...], log: EventLog, solution_path: Path,
    rehearse: bool = True,
) -> bool:
    """The correctness tests; each case lists its data files (one per call, all
    on the same buffers). Returns False if a backend error ended the run."""
    for case in cases:
        test = challenge.test(case.name)
        site = CallSite(runtime.xp, challenge, test.sizes)
        data_sets = [load_case_data(Path(path)) for path in case.data]
        if rehearse:
            log.emit("prepare", test=test.name)
            site.rehearse(data_sets[0].inputs, data_sets[0].expected)
        log.emit("start", test=test.name)
        started = time.perf_counter()
        verdict, calls = Verdict(True), 0
        for data in data_sets:
            site.load(data.inputs, data.expected)
            calls += 1
            try:
                verdict = _call_and_verify(runtime, solve, site)
                if verdict.passed and runtime.recheck_schedules:
                    verdict = race_under_other_schedules(cast(ScheduledRuntime, runtime), solve, site) or verdict
            except (HostWorkEscaped, *runtime.error_types) as error:
                _emit_test(log, test, backend_failure(error), calls, started)
                return False
            except Exception as error:  # noqa: BLE001 - a Python solution raised: its verdict
                _emit_test(log, test, raised(error, solution_path), calls, started)
                return False
            if not verdict.passed:
                if calls > 1:
                    verdict.message = f"call {calls} of {len(case.data)} on the same buffers: {verdict.message}"
                break
        _emit_test(log, test, verdict, calls, started)
    return True


def race_under_other_schedules(runtime: ScheduledRuntime, solve: Solve, site: CallSite) -> Verdict | None:
    """Where the backend lets us order threads (emu), repeat a passing call under
    the other orders. If one fails, call again in forward order: a race if that
    passes, state carried between calls (a repeated call fails) if it does not."""
    for name in runtime.recheck_schedules:
        with runtime.schedule(name):
            again = _call_and_verify(runtime, solve, site)
        if again.passed:
            continue
        forward = _call_and_verify(runtime, solve, site)
        if not forward.passed:
            forward.message = f"a repeated call on the same inputs fails: {forward.message}"
            return forward
        message = f"passes with threads run in forward order, fails in {name} order (missing barrier?): {again.message}"
        return Verdict(False, "race", message, again.comparisons)
    return None


def _call_and_verify(runtime: Runtime, solve: Solve, site: CallSite) -> Verdict:
    site.prepare()
    solve(site)
    runtime.check()
    return site.verify()


def backend_failure(error: Exception) -> Verdict:
    """A CUDA error (by name), an emulator failure or host work left running
    ends the run: after a sticky CUDA error the context is gone for every
    later call, and a thread left running can touch any later call's buffers."""
    return Verdict(False, Reason(getattr(error, "reason", Reason.CUDA_ERROR)), str(error))


def run_timing(runtime: TimingRuntime, solve: Solve, challenge: Challenge, spec: TimingJob, log: EventLog, solution_path: Path) -> None:
    """Time the performance test. Every timed call runs on one of several data
    sets at the same addresses and is verified, so caching, call counting and
    skipped work fail instead of looking fast."""
    test = challenge.test(spec.name)
    site = CallSite(runtime.xp, challenge, test.sizes)
    log.emit("prepare", test=test.name)
    data_sets = []
    for path in spec.data:
        data = load_case_data(Path(path))
        data_sets.append(({k: runtime.xp.asarray(v) for k, v in data.inputs.items()}, {k: runtime.xp.asarray(v) for k, v in data.expected.items()}))
    site.rehearse(*data_sets[0])
    log.emit("start", test=test.name, phase="timing")
    started = time.perf_counter()
    failure: list[Verdict] = []
    worst: list[Comparison] = []  # the comparisons of the timed call closest to failing
    calls = 0

    def timed() -> Sample:
        nonlocal calls, worst
        site.load(*data_sets[calls % len(data_sets)])
        site.prepare()
        calls += 1
        check = ReturnCheck()
        sample = runtime.timed_call(lambda: check.call(solve, site), check)  # the rest checked once the GPU is done
        verdict = site.verify()
        if not verdict.passed:
            verdict.message = f"timed call {calls}: {verdict.message}"
            failure.append(verdict)
            raise _StopTiming
        if not worst or _margin(verdict.comparisons) > _margin(worst):
            worst = verdict.comparisons
        return sample

    try:
        # warm-up: module load, lazy allocations, the clock ramping up; verified, not recorded
        warm_until = time.perf_counter() + WARMUP_S
        while True:
            timed()
            if time.perf_counter() >= warm_until:
                break
        state_before = runtime.gpu_state()
        measurement = measure(timed, make_criterion(spec.criterion), spec.budget)
        state_after = runtime.gpu_state()
    except _StopTiming:
        _emit_test(log, test, failure[0], calls, started)
        return
    except (HostWorkEscaped, *runtime.error_types) as error:
        _emit_test(log, test, backend_failure(error), calls, started)
        return
    except Exception as error:  # noqa: BLE001 - a Python solution raised: its verdict
        _emit_test(log, test, raised(error, solution_path), calls, started)
        return
    gpu = [s.gpu_time_s for s in measurement.samples]
    wall = [s.wall_time_s for s in measurement.samples]
    overhead = runtime.call_overhead()
    escaped = _escaped(gpu, wall, overhead)
    verdict = Verdict(True, comparisons=worst)
    if escaped:
        verdict = Verdict(
            False,
            Reason.TIMING_ESCAPE,
            f"host wall time {summarize(wall).median * 1e6:.1f} us per call against {summarize(gpu).median * 1e6:.1f} us "
            f"on the timed stream (empty call: {overhead * 1e6:.1f} us): work runs outside the timer",
        )
    _emit_test(log, test, verdict, calls, started)
    timing = TimingResult(
        test=test.name,
        sizes=test.sizes,
        gpu_time_s=gpu,
        wall_time_s=wall,
        call_overhead_s=overhead,
        stop_reason=measurement.stop_reason,
        bytes_moved=challenge.cost_of("bytes", test.sizes),
        copy_bandwidth_bytes_per_s=runtime.copy_bandwidth(),
        escaped=escaped,
        device=runtime.device_name,
        gpu_state_before=state_before,
        gpu_state_after=state_after,
        clock_note=clock_moved(state_before, state_after),
    )
    log.emit("timing", result=asdict(timing))


def _margin(comparisons: list[Comparison]) -> float:
    return max((c.worst_ratio if c.worst_ratio is not None else float("inf")) for c in comparisons)


class _StopTiming(Exception):
    pass


def _escaped(gpu: list[float], wall: list[float], overhead: float) -> bool:
    gpu_median, wall_median = summarize(gpu).median, summarize(wall).median
    return wall_median > gpu_median + overhead + max(ESCAPE_ABSOLUTE_S, ESCAPE_RELATIVE * gpu_median)


def raised(error: BaseException, solution: Path) -> Verdict:
    """A Python solution's exception, located at the deepest line of its file."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == solution]
    place = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    return Verdict(False, Reason(exception_reason(error)), f"{place}{type(error).__name__}: {error}")


def _emit_test(log: EventLog, test: Any, verdict: Verdict, calls: int, started: float) -> None:
    result = TestResult(
        test.name, test.kind, test.sizes, verdict.passed, verdict.reason, verdict.message,
        verdict.comparisons, calls, time.perf_counter() - started,
    )
    log.emit("test", result=asdict(result))


def read_job(lifeline: int) -> Job:
    """The job: the first line on the lifeline pipe."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(lifeline, 65536)
        if not chunk:
            raise SystemExit("harness.worker: the harness closed the lifeline before sending a job")
        data += chunk
    return Job.from_json(data.decode())


def main(log: EventLog, job: Job) -> int:
    challenge = load_challenge(job.challenge, Path(job.root))
    runtime = make_runtime(job.backend, unpooled=job.unpooled)
    log.emit("ready", device=runtime.device_name)
    solution_path = Path(job.solution).resolve()
    try:
        solve = runtime.load(Path(job.library), challenge)
    except SolutionError as error:
        log.emit("error", reason=error.reason, message=str(error))
        return 0
    except Exception as error:  # noqa: BLE001 - importing a Python solution ran its code
        verdict = raised(error, solution_path)
        log.emit("error", reason=verdict.reason, message=verdict.message)
        return 0
    if run_tests(runtime, guarded(solve), challenge, job.tests, log, solution_path, job.rehearse) and job.timing:
        run_timing(cast(TimingRuntime, runtime), solve, challenge, job.timing, log, solution_path)
    log.emit("done")
    return 0


def _main_reporting_failures(events_fd: int, lifeline_fd: int) -> int:
    """A failure of the worker itself (not of the solution) is reported as such."""
    job = read_job(lifeline_fd)
    die_with_parent(lifeline_fd)
    log = EventLog(events_fd)
    try:
        return main(log, job)
    except Exception as error:  # noqa: BLE001 - the parent must learn why, whatever it was
        log.emit("fatal", message=f"{type(error).__name__}: {error}")
        raise


def _channel(argv: list[str]) -> tuple[int, int]:
    """(events, lifeline) descriptors: inherited ones (EVENTS_FD LIFELINE_FD), or
    the named pipes of `--fifo DIR` (under compute-sanitizer, which passes no
    descriptors on). The lifeline is opened first: the harness waits for it."""
    if argv[0] == "--fifo":
        folder = Path(argv[1])
        lifeline = os.open(folder / "lifeline", os.O_RDONLY)
        return os.open(folder / "events", os.O_WRONLY), lifeline
    return int(argv[0]), int(argv[1])


if __name__ == "__main__":
    sys.exit(_main_reporting_failures(*_channel(sys.argv[1:])))
