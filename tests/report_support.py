"""Report documents for tests that need timings, which no CPU run produces:
a cuda report built by harness.document from made-up results with sample
sets of a chosen median and spread, the same path `harness run` takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness import document
from harness.challenge import load_challenge
from harness.results import SolutionResult, TestResult, TimingResult

REPO = Path(__file__).resolve().parents[1]
CHALLENGE = "ssm_selective_scan"
COPY_BANDWIDTH = 4.1e12
GPU = {"index": "0", "name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000", "driver": "580.00"}


def timed_result(solution: str, median_s: float, cv: float, count: int, seed: int, reference: bool = False) -> SolutionResult:
    challenge = load_challenge(CHALLENGE, REPO)
    perf = challenge.tests_of("performance")[0]
    rng = np.random.default_rng(seed)
    samples = [float(median_s * x) for x in rng.lognormal(0.0, cv, count)]
    timing = TimingResult(
        test=perf.name, sizes=dict(perf.sizes), gpu_time_s=samples, wall_time_s=[s + 12e-6 for s in samples],
        call_overhead_s=9e-6, stop_reason="converged", bytes_moved=challenge.cost_of("bytes", perf.sizes),
        copy_bandwidth_bytes_per_s=COPY_BANDWIDTH, escaped=False, device=GPU["name"],
    )
    tests = [TestResult(t.name, t.kind, dict(t.sizes), True, calls=1, duration_s=0.01) for t in challenge.tests]
    return SolutionResult(solution=solution, backend="cuda", is_reference=reference, passed=True, tests=tests, timing=timing, duration_s=2.0)


def failed_result(solution: str) -> SolutionResult:
    challenge = load_challenge(CHALLENGE, REPO)
    example = challenge.tests_of("example")[0]
    tests = [TestResult(example.name, example.kind, dict(example.sizes), False, "wrong_output", "y: 3 of 8 elements out of tolerance", calls=1)]
    return SolutionResult(solution=solution, backend="cuda", tests=tests).fail("wrong_output", "example: y: 3 of 8 elements out of tolerance")


def synthetic_cuda_report(medians_s: dict[str, float], reference_median_s: float = 95e-6, failing: tuple[str, ...] = ()) -> dict[str, Any]:
    """A report of one challenge on one GPU: the reference, the given timed
    solutions and the given failing ones, with speedups against the reference."""
    challenge = load_challenge(CHALLENGE, REPO)
    results = [timed_result(f"reference/{CHALLENGE}.cu", reference_median_s, 0.03, 60, 0, reference=True)]
    results += [timed_result(label, median, 0.02 + 0.01 * i, 20 + 10 * i, i + 1) for i, (label, median) in enumerate(medians_s.items())]
    results += [failed_result(label) for label in failing]
    reference_median = float(np.median(results[0].timing.gpu_time_s))
    records = [document.result_record(CHALLENGE, r, REPO, 0, False, reference_median) for r in results]
    env = document.environment("cuda", [GPU], {"version": "13.0", "flags": ["-O3"], "arch": "sm_90"})
    return document.build([challenge], records, env)
