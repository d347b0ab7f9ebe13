"""Stopping criteria: when have we measured enough?

A criterion sees each new sample and says whether it is satisfied; the
measurement loop owns the time budget and the minimum count, so a criterion
can be tested with made-up samples and no GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol


class StoppingCriterion(Protocol):
    # A statistical criterion waits for the budget's minimum time before it
    # may stop the loop; a count does not (it reproduces a measurement).
    waits_for_min_time: bool

    def add_measurement(self, seconds: float) -> None: ...

    def is_finished(self) -> bool: ...


def relative_standard_error(samples: list[float]) -> float:
    """Standard error of the mean over the mean; inf below two samples."""
    n = len(samples)
    if n < 2:
        return math.inf
    mean = sum(samples) / n
    if mean <= 0:
        return math.inf
    variance = sum((x - mean) ** 2 for x in samples) / (n - 1)
    return math.sqrt(variance / n) / mean


@dataclass
class RelativeStandardError:
    """Finished once the mean is known to within `max_rse` (one standard error)."""

    max_rse: float = 0.005
    samples: list[float] = field(default_factory=list)
    waits_for_min_time = True

    def add_measurement(self, seconds: float) -> None:
        self.samples.append(seconds)

    def is_finished(self) -> bool:
        return relative_standard_error(self.samples) <= self.max_rse


@dataclass
class FixedCount:
    """Finished after exactly `count` samples: for reproducing a measurement."""

    count: int = 100
    seen: int = 0
    waits_for_min_time = False

    def add_measurement(self, seconds: float) -> None:
        self.seen += 1

    def is_finished(self) -> bool:
        return self.seen >= self.count


CRITERIA = {"rse": RelativeStandardError, "fixed": FixedCount}


def make_criterion(name: str, **params: float) -> StoppingCriterion:
    if name not in CRITERIA:
        raise ValueError(f"unknown stopping criterion {name!r}; known: {', '.join(CRITERIA)}")
    return CRITERIA[name](**params)  # type: ignore[arg-type]
