"""What to do, decided once: the Plan built from the command line, and the Job
of one solution that crosses into its worker process.

Every default of an evaluation lives here (timing budget in timing/loop.py's
Budget), and so does the policy that turns what a user asked into what runs:
timing only on a GPU and never under a memory checker, Python solutions only
on cuda. The CLI parses and calls `make_plan`; the library reads the Plan.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .backends import Backend
from .build import nvcc
from .challenge import SECRET_SEEDS_ENV, Challenge, TestCase
from .errors import HarnessError
from .timing.loop import Budget

# Per-test time limits, derived from the work (see `test_limit_s`). Generous:
# a correct solution is never near them, a hung one fails in seconds at the
# small sizes of practice checks. On emu the scans measured about 0.2 us per
# array element per call (2 CPU cores); the limit allows 250 times that.
STARTUP_LIMIT_S = {Backend.CUDA: 120.0, Backend.EMU: 30.0}  # worker start and loading the solution
TEST_BASE_S = {Backend.CUDA: 10.0, Backend.EMU: 5.0}
FIRST_TEST_EXTRA_S = {Backend.CUDA: 60.0, Backend.EMU: 0.0}  # JIT compilation of Python kernels
SECONDS_PER_ELEMENT = {Backend.CUDA: 1e-6, Backend.EMU: 5e-5}  # per array element per call
SANITIZER_SLOWDOWN = {Backend.CUDA: 100.0, Backend.EMU: 5.0}  # compute-sanitizer, AddressSanitizer
EMU_SCHEDULES = 2  # emu repeats a passing call in reverse thread order


@dataclass(frozen=True)
class Plan:
    """An evaluation, as the user asked for it and the policy allowed."""

    backend: Backend = Backend.CUDA
    check: bool = True  # run the example and functional tests
    time: bool = True  # time the performance test (cuda only, never sanitized)
    baselines: bool = False  # time each challenge's reference beside its solutions
    timeout_s: float | None = None  # every test's limit; None: derived from the test's size
    budget: Budget = field(default_factory=Budget)
    criterion: str = "rse"
    timing_data_sets: int = 3  # timed calls rotate over this many input sets
    timing_rounds: int = 1  # the timing in turns: every solution, then its baseline, a block of calls each, this often
    repeat_calls: int = 4  # the first functional test calls solve this often on one set of buffers
    arch: str | None = None  # e.g. sm_90; default: read from the GPU
    nvcc_flags: tuple[str, ...] = nvcc.DEFAULT_FLAGS
    gpus: tuple[int, ...] = (0,)  # one worker thread per GPU
    sanitize: bool = False  # emu: AddressSanitizer build; cuda: the tests under compute-sanitizer
    only_test: str | None = None  # run this one test (example, functional or performance)
    skip_python: bool = False  # the user asked to leave Python solutions out
    secret_seeds: str | None = field(default=None, repr=False)  # a grader's secret: hidden test seeds (challenge.with_secret_seeds)

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend(self.backend))
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise HarnessError(f"--timeout must be more than 0 seconds, not {self.timeout_s:g}")
        if not self.check and not self.time:
            raise HarnessError("nothing to do: neither tests nor timing")

    @property
    def gpu(self) -> int:
        return self.gpus[0]

    def runs_python(self) -> bool:
        return self.backend == Backend.CUDA and not self.skip_python

    def python_skip_reason(self) -> str:
        if self.skip_python:
            return "Python solutions skipped (--skip-python)"
        return "Python solutions need CuPy and a GPU: the emu backend runs CUDA C only (--skip-python leaves them out knowingly)"


def make_plan(backend: Backend, *, check: bool, time: bool, given: dict[str, Any], notes: list[str]) -> Plan:
    """The policy, once: what runs for a command on a backend. `given` holds
    the options the user set; `notes` collects what to tell the user."""
    sanitize = bool(given.get("sanitize"))
    if sanitize and not check:
        raise HarnessError("--sanitize runs the correctness tests: use it with run, check or grade")
    if sanitize and backend == Backend.CUDA:
        from .sanitizers import find_compute_sanitizer

        find_compute_sanitizer(nvcc.find_nvcc())  # missing: a set-up error before anything runs
    if sanitize and time:
        notes.append("--sanitize: correctness tests only, nothing is timed under a memory checker")
        time = False
    if backend != Backend.CUDA:
        if time and not check:
            raise HarnessError("timing needs a GPU: the emu backend checks correctness only")
        if time:
            notes.append("emu: correctness only, the performance-size test is skipped")
        time = False
        ignored = [f"--{name.replace('_', '-')}" for name in ("nvcc_flags", "gpu", "gpus", "arch") if given.get(name) is not None]
        if ignored:
            notes.append(f"emu: {', '.join(ignored)} apply to the cuda backend only and are ignored")
    budget = Budget(**{k: given[v] for k, v in (("min_samples", "min_samples"), ("max_samples", "max_samples"), ("time_s", "budget_s"), ("min_time_s", "min_time_s")) if given.get(v) is not None})
    if budget.min_samples > budget.max_samples:
        raise HarnessError(f"--min-samples {budget.min_samples} is more than --max-samples {budget.max_samples}")
    settings: dict[str, Any] = {
        "backend": backend, "check": check, "time": time, "budget": budget, "sanitize": sanitize,
        "timeout_s": given.get("timeout_s"), "only_test": given.get("only_test"),
        "skip_python": bool(given.get("skip_python")), "baselines": bool(given.get("baselines")) and time,
        "secret_seeds": given.get("secret_seeds") or os.environ.get(SECRET_SEEDS_ENV) or None,
    }
    rounds = given.get("rounds") or 1
    if time and rounds > 1:  # the budget is the whole timing's: each round takes its share
        settings["timing_rounds"] = rounds
        settings["budget"] = replace(budget, time_s=budget.time_s / rounds, min_time_s=budget.min_time_s / rounds)
    if settings["secret_seeds"]:
        notes.append("hidden seeds: the generated tests use seeds derived from the grader's secret; reports leave the seeds out")
    if given.get("criterion") is not None:
        settings["criterion"] = given["criterion"]
    if backend == Backend.CUDA:
        if given.get("arch") is not None:
            settings["arch"] = given["arch"]
        if given.get("nvcc_flags") is not None:
            settings["nvcc_flags"] = tuple(given["nvcc_flags"].split())
        if given.get("gpus") is not None:
            settings["gpus"] = tuple(given["gpus"])
        elif given.get("gpu") is not None:
            settings["gpus"] = (given["gpu"],)
    return Plan(**settings)


def array_elements(challenge: Challenge, case: TestCase) -> int:
    return sum(math.prod(challenge.shape(p, case.sizes)) for p in challenge.params if p.role != "size")


def test_limit_s(challenge: Challenge, case: TestCase, calls: int, plan: Plan, first: bool) -> float:
    """How long one test may run: a base, plus time per array element and call,
    scaled for a memory checker; --timeout replaces it."""
    if plan.timeout_s is not None:
        return plan.timeout_s
    backend = plan.backend
    repeats = calls * (EMU_SCHEDULES if backend == Backend.EMU else 1)
    limit = TEST_BASE_S[backend] + repeats * array_elements(challenge, case) * SECONDS_PER_ELEMENT[backend]
    if plan.sanitize:
        limit *= SANITIZER_SLOWDOWN[backend]
    return round(limit + (FIRST_TEST_EXTRA_S[backend] if first else 0.0))


def timing_limit_s(challenge: Challenge, case: TestCase, plan: Plan, first: bool) -> float:
    """The timing phase: the budget, plus the calls it makes at least (warm-up,
    min_samples) at the per-call limit of the performance size."""
    if plan.timeout_s is not None:
        return plan.timeout_s
    per_call = test_limit_s(challenge, case, 1, plan, first)
    return plan.budget.time_s + (plan.budget.min_samples + 1) * per_call


@dataclass(frozen=True)
class TestJob:
    __test__ = False  # not a pytest test class, despite the name

    name: str
    data: tuple[str, ...]  # one data file per call, all on the same buffers
    limit_s: float


@dataclass(frozen=True)
class TimingJob:
    name: str
    data: tuple[str, ...]  # timed calls rotate over these data sets
    budget: Budget
    criterion: str
    limit_s: float


@dataclass(frozen=True)
class Job:
    """One solution's work for its worker process, serialised once (to_json)."""

    challenge: str
    root: str
    backend: Backend
    library: str
    solution: str
    tests: tuple[TestJob, ...]
    timing: TimingJob | None
    startup_limit_s: float
    fixed_limits: bool = False  # the limits come from --timeout, not from the sizes
    unpooled: bool = False  # cuda: every array its own allocation (under compute-sanitizer)
    rehearse: bool = True  # run the checks once before each test's clock, so that CuPy compiles its kernels
    # off it: cuda only (NumPy has nothing to compile), and not under compute-sanitizer, which would report
    # CuPy's own CUB kernels reading their uninitialised scratch (its limits are generous anyway)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        timing = data["timing"]
        return cls(
            challenge=data["challenge"], root=data["root"], backend=Backend(data["backend"]), library=data["library"],
            solution=data["solution"], startup_limit_s=data["startup_limit_s"], fixed_limits=data["fixed_limits"],
            unpooled=data["unpooled"], rehearse=data["rehearse"],
            tests=tuple(TestJob(t["name"], tuple(t["data"]), t["limit_s"]) for t in data["tests"]),
            timing=None if timing is None else TimingJob(
                timing["name"], tuple(timing["data"]), Budget(**timing["budget"]), timing["criterion"], timing["limit_s"]
            ),
        )

    def limit_of(self, test: str) -> float:
        if self.timing is not None and test == self.timing.name:
            return self.timing.limit_s
        return next(t.limit_s for t in self.tests if t.name == test)

    @property
    def test_names(self) -> list[str]:
        return [t.name for t in self.tests] + ([self.timing.name] if self.timing else [])


def solution_job(challenge: Challenge, root: Path, solution: Path, library: Path, plan: Plan, tests: tuple[TestJob, ...], timing: TimingJob | None) -> Job:
    return Job(
        challenge=challenge.name, root=str(root), backend=plan.backend, library=str(library),
        solution=str(solution.resolve()), tests=tests, timing=timing,
        startup_limit_s=STARTUP_LIMIT_S[plan.backend] * (SANITIZER_SLOWDOWN[plan.backend] if plan.sanitize else 1.0),
        fixed_limits=plan.timeout_s is not None, rehearse=plan.backend == Backend.CUDA,
    )
