"""`--sanitize` on cuda: the tests once under each compute-sanitizer tool."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from . import sanitizers
from .build import nvcc
from .challenge import Challenge
from .plan import Job
from .results import Reason, SolutionResult
from .supervision import TestStarted, run_child


def run_under_compute_sanitizer(
    challenge: Challenge, job: Job, label: str, gpu: int, on_test: TestStarted | None = None
) -> SolutionResult:
    """The first tool with findings gives the verdict. A failure without
    findings is the verdict only if no later tool explains it (a race can make
    the output wrong under memcheck's schedule, and only racecheck names it);
    a timeout or an interruption ends it."""
    executable = sanitizers.find_compute_sanitizer(nvcc.toolchain().nvcc)
    # Unpooled allocations: each array is its own allocation, so an access
    # past one cannot land unseen in a neighbour from the same pool.
    job = replace(job, timing=None, unpooled=True, rehearse=False)
    first_failure: SolutionResult | None = None
    with tempfile.TemporaryDirectory(prefix="harness-sanitizer-") as scratch:
        for tool in sanitizers.CUDA_TOOLS:
            log = Path(scratch) / f"{tool}.log"
            prefix = sanitizers.compute_sanitizer_command(executable, tool, log)
            channel = Path(scratch) / f"{tool}-channel"
            channel.mkdir()
            result = run_child(challenge, job, label, prefix=prefix, gpu=gpu, on_test=on_test, sanitized=True, fifo_dir=channel)
            findings = sanitizers.parse_compute_sanitizer(log.read_text(errors="replace") if log.exists() else "")
            if findings:
                return result.fail(Reason.SANITIZER, findings.describe(tool))
            if not result.passed:
                first_failure = first_failure or result
                if result.reason in (Reason.TIMEOUT, Reason.INTERRUPTED):
                    break
    if first_failure is not None:
        return first_failure
    result.message = f"compute-sanitizer {', '.join(sanitizers.CUDA_TOOLS)}: no findings"
    return result
