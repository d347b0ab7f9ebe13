"""Test data: the inputs of a test case and the float64 outputs they must produce.

Inputs are drawn by the challenge's generate_inputs, cast to the parameter
dtypes, and the reference runs on exactly those values, widened without loss:
floating inputs as float64, integer inputs as int64 (usable as indices).
The reference runs once per case and variant; results are cached on disk so
that every solution's child process loads them instead of recomputing.
"""

from __future__ import annotations

import hashlib
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import expressions
from .challenge import DTYPES, Challenge, TestCase
from .errors import ChallengeError
from .plan import Plan, TestJob, TimingJob, test_limit_s, timing_limit_s


@dataclass(frozen=True)
class CaseData:
    """Everything needed to run and check one call of solve()."""

    inputs: dict[str, np.ndarray]  # in the parameter dtypes
    expected: dict[str, np.ndarray]  # float64


def cache_dir() -> Path:
    """$HARNESS_CACHE, else ~/.cache/harness."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "harness"
    path = Path(os.environ.get("HARNESS_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


def call_reference_py(challenge: Challenge, case: TestCase, function: Callable[..., Any], *args: Any) -> Any:
    """Calls a function of the challenge's reference.py; an exception there is
    the challenge's bug, reported with reference.py's file:line, not the harness's."""
    try:
        return function(*args)
    except Exception as error:
        path = challenge.root / "reference.py"
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == path]
        where = f"{path}:{frames[-1].lineno}" if frames else str(path)
        raise ChallengeError(
            f"{challenge.name}: {function.__name__}() raised {type(error).__name__} on test {case.name}: {error} ({where})"
        ) from error


def make_inputs(challenge: Challenge, case: TestCase, variant: int = 0) -> dict[str, np.ndarray]:
    """The inputs of `case`. Variant k > 0 draws fresh values of the same
    distribution (used to re-verify timed calls on new data at the same addresses)."""
    if case.literal_inputs is not None:
        if variant:
            raise ChallengeError(f"test {case.name} has literal inputs and no variants")
        raw = case.literal_inputs
    else:
        rng = np.random.default_rng([case.seed, variant])
        generate = challenge.reference_module.generate_inputs
        raw = call_reference_py(challenge, case, generate, case.distribution, dict(case.sizes), rng)
    inputs: dict[str, np.ndarray] = {}
    for param in challenge.inputs:
        if param.name not in raw:
            raise ChallengeError(f"{challenge.name}: inputs of {case.name} lack {param.name}")
        array = np.asarray(raw[param.name], dtype=DTYPES[param.dtype].array_name)
        shape = challenge.shape(param, case.sizes)
        if array.shape != shape:
            raise ChallengeError(
                f"{challenge.name}: test {case.name}: {param.name} has shape {array.shape}, expected {shape}"
            )
        inputs[param.name] = np.ascontiguousarray(array)
    for name in case.zero:
        inputs[name][...] = 0
    names = {**case.sizes, **inputs}
    for constraint in challenge.constraints:
        if not bool(expressions.evaluate(constraint, names)):
            raise ChallengeError(f"{challenge.name}: test {case.name} violates {constraint!r}")
    return inputs


def compute_expected(challenge: Challenge, case: TestCase, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    widened = {name: array.astype(np.int64 if array.dtype.kind in "iu" else np.float64) for name, array in inputs.items()}
    outputs = call_reference_py(challenge, case, challenge.reference_module.reference, widened, dict(case.sizes))
    expected: dict[str, np.ndarray] = {}
    for param in challenge.outputs:
        array = np.asarray(outputs[param.name], dtype=np.float64)
        shape = challenge.shape(param, case.sizes)
        if array.shape != shape:
            raise ChallengeError(f"{challenge.name}: reference gives {param.name} shape {array.shape}, expected {shape}")
        expected[param.name] = array
    return expected


def case_data_path(challenge: Challenge, case: TestCase, variant: int = 0) -> Path:
    """Where the data of (case, variant) is cached; produced on first use."""
    key = hashlib.sha256(f"{challenge.content_hash}:{case.name}:{case.seed}:{variant}".encode()).hexdigest()[:20]
    path = cache_dir() / "data" / challenge.name / f"{case.name}-{variant}-{key}.npz"
    if not path.exists():
        inputs = make_inputs(challenge, case, variant)
        expected = compute_expected(challenge, case, inputs)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(partial, **{f"in.{k}": v for k, v in inputs.items()}, **{f"out.{k}": v for k, v in expected.items()})
        partial.replace(path)  # atomic: concurrent harness runs never read half a file
    return path


def load_case_data(path: Path) -> CaseData:
    with np.load(path) as archive:
        inputs = {k[3:]: archive[k] for k in archive.files if k.startswith("in.")}
        expected = {k[4:]: archive[k] for k in archive.files if k.startswith("out.")}
    return CaseData(inputs=inputs, expected=expected)


def prepare_jobs(challenge: Challenge, plan: Plan) -> tuple[tuple[TestJob, ...], TimingJob | None]:
    """The data of every call the workers will make, computed now (or found in
    the cache), with each test's time limit. The first functional test calls
    solve() several times on fresh inputs and the same buffers."""
    selected = lambda case: plan.only_test in (None, case.name)  # noqa: E731
    tests: list[TestJob] = []
    if plan.check:
        cases = challenge.tests_of("example", "functional")
        first_functional = next((c for c in cases if c.kind == "functional"), None)
        for case in filter(selected, cases):
            calls = plan.repeat_calls if case is first_functional else 1
            data = tuple(str(case_data_path(challenge, case, v)) for v in range(calls))
            tests.append(TestJob(case.name, data, test_limit_s(challenge, case, calls, plan, first=not tests)))
    timing = None
    performance = challenge.tests_of("performance")[0]
    if plan.time and selected(performance):
        data = tuple(str(case_data_path(challenge, performance, v)) for v in range(plan.timing_data_sets))
        limit = timing_limit_s(challenge, performance, plan, first=not tests)
        timing = TimingJob(performance.name, data, plan.budget, plan.criterion, limit)
    return tuple(tests), timing
