"""What an evaluation produces: typed, JSON-serialisable records of raw results.

Statistics and rounding happen in reports, not here: timings keep their raw
samples in seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import TextEnum
from .timing.loop import StopReason
from .backends.gpu_state import GpuState
from .validation import Comparison

class Reason(TextEnum):
    """Why a solution or a test did not pass: a closed set, each with the plain
    sentence a table shows (REASONS)."""

    COMPILE_ERROR = "compile_error"
    MISSING_SYMBOL = "missing_symbol"
    SIGNATURE_MISMATCH = "signature_mismatch"
    UNSUPPORTED = "unsupported"
    WRONG_OUTPUT = "wrong_output"
    UNWRITTEN_OUTPUT = "unwritten_output"
    OUT_OF_BOUNDS_WRITE = "out_of_bounds_write"
    INPUT_MODIFIED = "input_modified"
    CUDA_ERROR = "cuda_error"
    EMULATION_ERROR = "emulation_error"
    RACE = "race"
    SANITIZER = "sanitizer"
    CRASH = "crash"
    EXITED = "exited"
    TIMEOUT = "timeout"
    TIMING_ESCAPE = "timing_escape"
    HOST_WORK_ESCAPE = "host_work_escape"
    EXCEPTION = "exception"
    MISSING_PACKAGE = "missing_package"
    NOT_RUN = "not_run"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"
    INTERNAL_ERROR = "internal_error"


REASONS = {
    Reason.COMPILE_ERROR: "does not compile",
    Reason.MISSING_SYMBOL: "no solve() symbol",
    Reason.SIGNATURE_MISMATCH: "solve() parameters differ from the signature",
    Reason.UNSUPPORTED: "uses a feature this backend cannot run",
    Reason.WRONG_OUTPUT: "output out of tolerance",
    Reason.UNWRITTEN_OUTPUT: "output elements never written",
    Reason.OUT_OF_BOUNDS_WRITE: "wrote outside an array",
    Reason.INPUT_MODIFIED: "modified an input",
    Reason.CUDA_ERROR: "CUDA error",
    Reason.EMULATION_ERROR: "failure found by the emulator",
    Reason.RACE: "results depend on the thread schedule",
    Reason.SANITIZER: "a memory or race checker found an error",
    Reason.CRASH: "process crashed",
    Reason.EXITED: "solve() ended the process",
    Reason.TIMEOUT: "did not finish in time",
    Reason.TIMING_ESCAPE: "work escaped the timer",
    Reason.HOST_WORK_ESCAPE: "left a thread or process running after solve()",
    Reason.EXCEPTION: "solve() raised an exception",
    Reason.MISSING_PACKAGE: "needs a Python package that is not installed",
    Reason.NOT_RUN: "not run",
    Reason.SKIPPED: "skipped",
    Reason.INTERRUPTED: "interrupted",
    Reason.INTERNAL_ERROR: "the harness itself failed (not the solution)",
}


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite the name

    name: str
    kind: str
    sizes: dict[str, int]
    passed: bool
    reason: Reason | None = None
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
    stop_reason: StopReason
    bytes_moved: float | None
    copy_bandwidth_bytes_per_s: float | None
    escaped: bool
    device: str = ""
    gpu_state_before: GpuState | None = None  # SM clock and temperature as timing began
    gpu_state_after: GpuState | None = None
    clock_note: str | None = None  # why the clock cannot be trusted to have held (gpu_state.clock_moved)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingResult:
        states = {k: GpuState(**{**v, "slowdowns": tuple(v["slowdowns"])}) if v else None for k, v in data.items() if k.startswith("gpu_state_")}
        return cls(**{**data, **states})


@dataclass
class SolutionResult:
    solution: str  # its path, relative to the repository root where it lies inside it
    backend: str
    is_reference: bool = False
    passed: bool = False
    reason: Reason | None = None
    message: str = ""
    skip_requested: bool = False  # skipped because the user asked (--skip-python): not a failure
    tests: list[TestResult] = field(default_factory=list)
    timing: TimingResult | None = None
    stdout_tail: str = ""  # the solution's own output (device printf): its last OUTPUT_TAIL_BYTES
    stdout_bytes: int = 0
    stderr_tail: str = ""
    duration_s: float = 0.0

    def fail(self, reason: Reason, message: str) -> SolutionResult:
        self.passed, self.reason, self.message = False, Reason(reason), message
        return self

    @property
    def counts_as_passed(self) -> bool:
        """Passed, or left out because the user asked for it."""
        return self.passed or (self.reason == Reason.SKIPPED and self.skip_requested)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def test_result_from_dict(data: dict[str, Any]) -> TestResult:
    comparisons = [Comparison(**{**c, "worst_index": tuple(c["worst_index"]), "worst_axes": tuple(c["worst_axes"])}) for c in data.pop("comparisons", [])]
    reason = data.pop("reason", None)
    return TestResult(**data, reason=Reason(reason) if reason else None, comparisons=comparisons)
