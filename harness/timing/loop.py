"""The measurement loop: call a timed closure until a criterion or the budget says stop.

The number of samples depends only on the criterion, the budget and the
clock, never on anything the solution can return, so a solution cannot steer
how often it is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import TextEnum
from .criteria import StoppingCriterion


class StopReason(TextEnum):
    CONVERGED = "converged"  # the criterion is satisfied
    TIME_BUDGET = "time_budget"  # the budget ran out once min_samples were in
    MAX_SAMPLES = "max_samples"


@dataclass(frozen=True)
class Sample:
    gpu_time_s: float  # device events around solve()
    wall_time_s: float  # host clock around solve() and a device synchronise


@dataclass(frozen=True)
class Budget:
    min_samples: int = 5  # never fewer, whatever the criterion or the budget says
    max_samples: int = 2000
    time_s: float = 5.0  # past this, stop as soon as min_samples are in
    # Never converged before this long: five quick samples can all miss a slower
    # stretch that a longer look sees, and separate runs then disagree (README).
    min_time_s: float = 0.5


@dataclass
class Measurement:
    samples: list[Sample] = field(default_factory=list)
    stop_reason: StopReason | None = None


def measure(
    timed_call: Callable[[], Sample],
    criterion: StoppingCriterion,
    budget: Budget,
    clock: Callable[[], float] = time.perf_counter,
) -> Measurement:
    result = Measurement()
    started = clock()
    while True:
        sample = timed_call()
        result.samples.append(sample)
        criterion.add_measurement(sample.gpu_time_s)
        count, elapsed = len(result.samples), clock() - started
        if count >= budget.max_samples:
            result.stop_reason = StopReason.MAX_SAMPLES
        elif count >= budget.min_samples and elapsed >= budget.time_s:
            result.stop_reason = StopReason.TIME_BUDGET
        elif count >= budget.min_samples and criterion.is_finished() and (
            not criterion.waits_for_min_time or elapsed >= budget.min_time_s
        ):
            result.stop_reason = StopReason.CONVERGED
        else:
            continue
        return result
