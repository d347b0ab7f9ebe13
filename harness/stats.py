"""Summary statistics of timing samples; only reports round them."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .timing.criteria import relative_standard_error


@dataclass(frozen=True)
class Summary:
    count: int
    median: float
    minimum: float
    maximum: float
    mean: float
    stdev: float
    cv: float  # stdev / mean
    rse: float  # standard error of the mean / mean


def summarize(samples: list[float]) -> Summary:
    if not samples:
        raise ValueError("no samples to summarize")
    mean = statistics.fmean(samples)
    stdev = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return Summary(
        count=len(samples),
        median=statistics.median(samples),
        minimum=min(samples),
        maximum=max(samples),
        mean=mean,
        stdev=stdev,
        cv=stdev / mean if mean > 0 else math.inf,
        rse=relative_standard_error(samples),
    )
