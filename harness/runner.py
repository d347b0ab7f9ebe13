"""Evaluate solutions of a challenge: prepare test data, build, run each
solution in its own child process with a hard timeout, collect results.

Nothing a solution does can take this process down: compile errors, crashes,
CUDA errors, hangs, exit() and floods of output all end as a SolutionResult
with a reason, and every other solution is still evaluated.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import sanitizers
from .build import nvcc
from .backends.python_solution import check_python_signature
from .build.signature import check_signature
from .challenge import Challenge, TestCase
from .errors import SolutionError, UnsupportedFeature
from .results import SolutionResult, TestResult, TimingResult, test_result_from_dict
from .testdata import cache_dir, case_data_path
from .timing.loop import Budget

SOLUTION_SUFFIXES = (".cu", ".py")
OUTPUT_TAIL_BYTES = 4096
ProgressCallback = Callable[[str, str], None]  # (solution label, what it is doing)


@dataclass(frozen=True)
class Options:
    backend: str = "cuda"
    check: bool = True  # run the example and functional tests
    time: bool = True  # time the performance test (cuda only)
    timeout_s: float = 300.0  # per solution, building excluded
    budget: Budget = field(default_factory=Budget)
    criterion: str = "rse"
    timing_data_sets: int = 3  # timed calls rotate over this many input sets
    repeat_calls: int = 4  # the first functional test calls solve this often on one set of buffers
    arch: str | None = None  # e.g. sm_90; default: read from the GPU
    nvcc_flags: tuple[str, ...] = nvcc.DEFAULT_FLAGS
    gpu: int = 0
    sanitize: bool = False  # emu: AddressSanitizer build; cuda: the tests under compute-sanitizer (harness/sanitizers.py)


def discover_solutions(challenge: Challenge, root: Path) -> list[Path]:
    """solutions/<name>/* in name order, then reference/<name>.cu."""
    folder = root / "solutions" / challenge.name
    found = sorted(p for p in folder.glob("*") if p.suffix in SOLUTION_SUFFIXES) if folder.is_dir() else []
    reference = reference_solution(challenge, root)
    return found + ([reference] if reference.is_file() else [])


def reference_solution(challenge: Challenge, root: Path) -> Path:
    return root / "reference" / f"{challenge.name}.cu"


def label_of(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def evaluate(
    challenge: Challenge,
    solutions: list[Path],
    options: Options,
    root: Path,
    progress: ProgressCallback | None = None,
) -> list[SolutionResult]:
    notify = progress or (lambda label, what: None)
    options = effective_options(options)
    notify("", "preparing test data (float64 reference)")
    data = prepare_data(challenge, options)
    libraries = build_all(challenge, solutions, options, root, notify)
    return [run_built(challenge, path, libraries[path], options, root, data, notify) for path in solutions]


def effective_options(options: Options) -> Options:
    """Only a GPU is timed, and not under a sanitizer."""
    return replace(options, time=False) if options.backend != "cuda" or options.sanitize else options


PreparedData = tuple[list[dict[str, Any]], dict[str, Any] | None]  # (tests, timing) as prepare_data gives them


def run_built(
    challenge: Challenge,
    path: Path,
    built: Path | SolutionResult,
    options: Options,
    root: Path,
    data: PreparedData,
    notify: ProgressCallback,
) -> SolutionResult:
    """One solution after build_all: run its library, or keep its failed build as the result."""
    label = label_of(path, root)
    if isinstance(built, SolutionResult):
        result = replace(built)  # a copy: grading may report one failed build on several GPUs
    else:
        notify(label, "running")
        result = run_solution(challenge, path, built, options, root, *data)
        notify(label, "done")
    result.is_reference = path.resolve() == reference_solution(challenge, root).resolve()
    return result


def prepare_data(challenge: Challenge, options: Options) -> PreparedData:
    """Compute (or find cached) the data of every call the children will make."""
    tests: list[dict[str, Any]] = []
    if options.check:
        cases = challenge.tests_of("example", "functional")
        first_functional = next((c for c in cases if c.kind == "functional"), None)
        for case in cases:
            calls = options.repeat_calls if case is first_functional else 1
            tests.append({"name": case.name, "data": [str(case_data_path(challenge, case, v)) for v in range(calls)]})
    timing = None
    if options.time:
        case: TestCase = challenge.tests_of("performance")[0]
        timing = {
            "name": case.name,
            "data": [str(case_data_path(challenge, case, v)) for v in range(options.timing_data_sets)],
            "min_samples": options.budget.min_samples,
            "max_samples": options.budget.max_samples,
            "budget_s": options.budget.time_s,
            "criterion": options.criterion,
        }
    return tests, timing


def build_all(
    challenge: Challenge, solutions: list[Path], options: Options, root: Path, notify: ProgressCallback
) -> dict[Path, Path | SolutionResult]:
    """Compile in parallel; a failed build becomes that solution's result."""

    def build_one(path: Path) -> Path | SolutionResult:
        label = label_of(path, root)
        notify(label, "compiling")
        try:
            if path.suffix == ".py":
                check_python_signature(path.read_text(errors="replace"), challenge)
                if options.backend != "cuda":
                    raise UnsupportedFeature("Python solutions run on the cuda backend only (they need CuPy and a GPU)")
                return path  # nothing to build: the child imports it
            check_signature(path.read_text(errors="replace"), challenge)
            return build_library(path, options)
        except SolutionError as error:
            message = str(error)
            diagnostics = getattr(error, "diagnostics", [])
            if diagnostics:
                message = "\n".join(diagnostics)
            return SolutionResult(solution=label, backend=options.backend).fail(error.reason, message)

    workers = max(1, min(len(solutions), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(solutions, pool.map(build_one, solutions)))


def build_library(path: Path, options: Options) -> Path:
    if options.backend == "emu":
        from .backends.emu import build_emu_library

        return build_emu_library(path, cache_dir(), sanitize=options.sanitize)
    arch = options.arch or _device_arch(options.gpu)
    flags = options.nvcc_flags + ((sanitizers.LINEINFO_FLAG,) if options.sanitize else ())
    return nvcc.build_library(path, cache_dir(), arch, flags)


def _device_arch(gpu: int) -> str:
    from .backends import visible_gpus

    gpus = visible_gpus()
    if not gpus:
        return "sm_90"  # building without a GPU (e.g. to check compilation): Hopper
    return gpus[min(gpu, len(gpus) - 1)].arch


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


def run_solution(
    challenge: Challenge,
    path: Path,
    library: Path,
    options: Options,
    root: Path,
    tests: list[dict[str, Any]],
    timing: dict[str, Any] | None,
) -> SolutionResult:
    if options.sanitize and options.backend == "cuda":
        return run_under_compute_sanitizer(challenge, path, library, options, root, tests)
    env: dict[str, str] = {}
    if options.sanitize:  # emu: the AddressSanitizer runtime must be preloaded
        from .backends.emu import sanitizer_env

        env = sanitizer_env()
    return run_child(challenge, path, library, options, root, tests, timing, env=env)


def run_under_compute_sanitizer(
    challenge: Challenge, path: Path, library: Path, options: Options, root: Path, tests: list[dict[str, Any]]
) -> SolutionResult:
    """The tests once under each compute-sanitizer tool; the first tool with
    findings gives the verdict. A failure without findings is the verdict only
    if no later tool explains it (a race can make the output wrong under
    memcheck's schedule, and only racecheck names it); a timeout ends it."""
    executable = sanitizers.find_compute_sanitizer(nvcc.toolchain().nvcc)
    first_failure: SolutionResult | None = None
    with tempfile.TemporaryDirectory(prefix="harness-sanitizer-") as scratch:
        for tool in sanitizers.CUDA_TOOLS:
            log = Path(scratch) / f"{tool}.log"
            prefix = sanitizers.compute_sanitizer_command(executable, tool, log)
            # Unpooled allocations: each array is its own allocation, so an access
            # past one cannot land unseen in a neighbour from the same pool.
            result = run_child(challenge, path, library, options, root, tests, None, prefix=prefix, unpooled=True)
            findings = sanitizers.parse_compute_sanitizer(log.read_text(errors="replace") if log.exists() else "")
            if findings:
                return result.fail("sanitizer", findings.describe(tool))
            if not result.passed:
                first_failure = first_failure or result
                if result.reason == "timeout":
                    break
    if first_failure is not None:
        return first_failure
    result.message = f"compute-sanitizer {', '.join(sanitizers.CUDA_TOOLS)}: no findings"
    return result


def run_child(
    challenge: Challenge,
    path: Path,
    library: Path,
    options: Options,
    root: Path,
    tests: list[dict[str, Any]],
    timing: dict[str, Any] | None,
    *,
    prefix: list[str] | None = None,
    env: dict[str, str] | None = None,
    unpooled: bool = False,
) -> SolutionResult:
    """One child process running the job, killed with everything it started
    if it outlives the timeout; its events and way of ending become the result."""
    result = SolutionResult(solution=label_of(path, root), backend=options.backend)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-") as scratch:
        events_path = Path(scratch) / "events.jsonl"
        job = {
            "challenge": challenge.name,
            "root": str(root),
            "backend": options.backend,
            "library": str(library),
            "solution": str(path.resolve()),
            "tests": tests,
            "timing": timing,
            "events": str(events_path),
            "unpooled": unpooled,
        }
        job_path = Path(scratch) / "job.json"
        job_path.write_text(json.dumps(job))
        child_env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(options.gpu), PYTHONUNBUFFERED="1", **(env or {}))
        child = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "harness.worker", str(job_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            start_new_session=True,  # its own process group: a timeout kills everything it started
        )
        stdout, stderr = _Tail(child.stdout), _Tail(child.stderr)
        timed_out = False
        try:
            child.wait(timeout=options.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        events = _read_events(events_path)
    result.stdout_tail, result.stdout_bytes, result.stderr_tail = stdout.text(), stdout.total, stderr.text()
    result.duration_s = time.perf_counter() - started
    return interpret(challenge, result, events, child.returncode, timed_out, options, tests, timing)


def _read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            break  # the child died mid-line
    return events


def interpret(
    challenge: Challenge,
    result: SolutionResult,
    events: list[dict[str, Any]],
    returncode: int,
    timed_out: bool,
    options: Options,
    tests: list[dict[str, Any]],
    timing: dict[str, Any] | None,
) -> SolutionResult:
    """Turn the child's event log and its way of ending into a result."""
    in_progress: str | None = None
    finished = False
    for event in events:
        kind = event["event"]
        if kind == "start":
            in_progress = event["test"]
        elif kind == "test":
            result.tests.append(test_result_from_dict(event["result"]))
            in_progress = None
        elif kind == "timing":
            result.timing = TimingResult(**event["result"])
        elif kind == "error":
            return result.fail(event["reason"], event["message"])
        elif kind == "fatal":
            return result.fail("crash", "the harness worker failed: " + event["message"])
        elif kind == "done":
            finished = True
    where = f" during test {in_progress}" if in_progress else ""
    sanitizer = sanitizers.asan_summary(result.stderr_tail)
    if sanitizer and not finished:
        _record_abort(challenge, result, in_progress, "sanitizer", sanitizer + where)
    elif timed_out:
        _record_abort(challenge, result, in_progress, "timeout", f"no result within {options.timeout_s:g} s{where}")
    elif not finished:
        if returncode < 0:
            name = signal.Signals(-returncode).name if -returncode in signal.Signals._value2member_map_ else str(-returncode)
            _record_abort(challenge, result, in_progress, "crash", f"the process was killed by {name}{where}")
        else:
            _record_abort(challenge, result, in_progress, "exited", f"the process ended with status {returncode}{where} before finishing")
    planned = [t["name"] for t in tests] + ([timing["name"]] if timing else [])
    seen = {t.name for t in result.tests}
    for name in planned:
        if name not in seen:
            case = challenge.test(name)
            result.tests.append(
                TestResult(name, case.kind, case.sizes, passed=False, reason="not_run", message="an earlier failure ended the run")
            )
    failed = next((t for t in result.tests if not t.passed and t.reason != "not_run"), None)
    if failed is not None:
        return result.fail(failed.reason or "wrong_output", f"{failed.name}: {failed.message}")
    if result.reason is None:
        result.passed = True
    return result


def _record_abort(challenge: Challenge, result: SolutionResult, test: str | None, reason: str, message: str) -> None:
    if test is not None:
        case = challenge.test(test)
        result.tests.append(TestResult(test, case.kind, case.sizes, passed=False, reason=reason, message=message))
    else:
        result.fail(reason, message)

