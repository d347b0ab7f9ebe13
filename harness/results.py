"""What an evaluation produces: typed, JSON-serialisable records of raw results.

Statistics and rounding happen in reports, not here: timings keep their raw
samples in seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .validation import Comparison

# Verdict categories, each with the plain sentence a table shows.
REASONS = {
    "compile_error": "does not compile",
    "missing_symbol": "no solve() symbol",
    "signature_mismatch": "solve() parameters differ from the signature",
    "unsupported": "uses a feature this backend cannot run",
    "wrong_output": "output out of tolerance",
    "unwritten_output": "output elements never written",
    "out_of_bounds_write": "wrote outside an array",
    "input_modified": "modified an input",
    "cuda_error": "CUDA error",
    "emulation_error": "failure found by the emulator",
    "race": "results depend on the thread schedule",
    "sanitizer": "a memory or race checker found an error",
    "crash": "process crashed",
    "exited": "solve() ended the process",
    "timeout": "did not finish in time",
    "timing_escape": "work escaped the timer",
    "exception": "solve() raised an exception",
    "missing_package": "needs a Python package that is not installed",
    "not_run": "not run",
}


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite the name

    name: str
    kind: str
    sizes: dict[str, int]
    passed: bool
    reason: str | None = None
    message: str = ""
    comparisons: list[Comparison] = field(default_factory=list)
    calls: int = 0
    duration_s: float = 0.0


@dataclass
class TimingResult:
    test: str
    sizes: dict[str, int]
    gpu_time_s: list[float]
    wall_time_s: list[float]
    call_overhead_s: float  # host wall time of an empty call through the same path
    stop_reason: str
    bytes_moved: float | None
    copy_bandwidth_bytes_per_s: float | None
    escaped: bool
    device: str = ""


@dataclass
class SolutionResult:
    solution: str  # its path, relative to the repository root where it lies inside it
    backend: str
    is_reference: bool = False
    passed: bool = False
    reason: str | None = None
    message: str = ""
    tests: list[TestResult] = field(default_factory=list)
    timing: TimingResult | None = None
    stdout_tail: str = ""
    stdout_bytes: int = 0
    stderr_tail: str = ""
    duration_s: float = 0.0

    def fail(self, reason: str, message: str) -> SolutionResult:
        self.passed, self.reason, self.message = False, reason, message
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def test_result_from_dict(data: dict[str, Any]) -> TestResult:
    comparisons = [Comparison(**{**c, "worst_index": tuple(c["worst_index"]), "worst_axes": tuple(c["worst_axes"])}) for c in data.pop("comparisons", [])]
    return TestResult(**data, comparisons=comparisons)
