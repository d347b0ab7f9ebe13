"""Stopping criteria, the measurement loop and statistics, on made-up samples
and a fake clock: no GPU needed."""

from __future__ import annotations

import math

import pytest

from harness.stats import summarize
from harness.timing.criteria import FixedCount, RelativeStandardError, make_criterion, relative_standard_error
from harness.timing.loop import Budget, Sample, measure


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def feeder(values, clock: FakeClock, seconds_per_call: float):
    iterator = iter(values)

    def timed() -> Sample:
        clock.now += seconds_per_call
        value = next(iterator)
        return Sample(gpu_time_s=value, wall_time_s=value * 1.1)

    return timed


def test_rse_of_constant_samples_is_zero_and_of_one_sample_infinite():
    assert relative_standard_error([2.0, 2.0, 2.0]) == 0.0
    assert math.isinf(relative_standard_error([2.0]))
    assert relative_standard_error([1.0, 3.0]) == pytest.approx(0.5)


def test_steady_samples_converge_at_the_minimum_count():
    clock = FakeClock()
    budget = Budget(min_samples=7, time_s=10, min_time_s=0.0)
    result = measure(feeder([1e-3] * 100, clock, 1e-3), RelativeStandardError(0.005), budget, clock)
    assert len(result.samples) == 7 and result.stop_reason == "converged"


def test_steady_samples_are_taken_for_the_minimum_time_before_converging():
    """Five steady samples would satisfy the criterion; the loop goes on for
    min_time_s, so a slower stretch later on is seen too."""
    clock = FakeClock()
    values = [1e-3] * 5 + [1.2e-3] * 295
    result = measure(feeder(values, clock, 1e-3), RelativeStandardError(0.005), Budget(min_samples=5, time_s=10, min_time_s=0.2), clock)
    assert len(result.samples) == 200 and result.stop_reason == "converged"
    assert sorted(s.gpu_time_s for s in result.samples)[100] == 1.2e-3  # the median sees the slower stretch


def test_a_fixed_count_does_not_wait_for_the_minimum_time():
    clock = FakeClock()
    result = measure(feeder([1e-3] * 10, clock, 1e-3), FixedCount(count=5), Budget(min_samples=1, time_s=10, min_time_s=5.0), clock)
    assert len(result.samples) == 5 and result.stop_reason == "converged"


def test_the_time_budget_ends_the_loop_before_the_minimum_time():
    clock = FakeClock()
    result = measure(feeder([1e-3] * 100, clock, 0.125), RelativeStandardError(0.005), Budget(min_samples=5, time_s=1.0, min_time_s=3.0), clock)
    assert len(result.samples) == 8 and result.stop_reason == "time_budget"


def test_noisy_samples_run_until_the_time_budget():
    clock = FakeClock()
    noisy = [1e-3 if i % 2 else 3e-3 for i in range(1000)]
    result = measure(feeder(noisy, clock, 0.1), RelativeStandardError(1e-6), Budget(min_samples=5, time_s=2.0), clock)
    assert result.stop_reason == "time_budget" and len(result.samples) == 20


def test_a_slow_solution_still_gets_the_minimum_count_within_bounded_time():
    clock = FakeClock()
    result = measure(feeder([2.8, 2.9, 2.7, 3.0] * 3, clock, 2.8), RelativeStandardError(1e-9), Budget(min_samples=3, time_s=1.0), clock)
    assert len(result.samples) == 3 and result.stop_reason == "time_budget"


def test_max_samples_caps_the_loop():
    clock = FakeClock()
    noisy = [1.0 if i % 2 else 2.0 for i in range(100)]
    result = measure(feeder(noisy, clock, 0.0), RelativeStandardError(1e-9), Budget(min_samples=1, max_samples=10, time_s=1e9), clock)
    assert len(result.samples) == 10 and result.stop_reason == "max_samples"


def test_fixed_count_and_lookup_by_name():
    criterion = make_criterion("fixed", count=3)
    assert isinstance(criterion, FixedCount)
    for _ in range(3):
        assert not criterion.is_finished()
        criterion.add_measurement(1.0)
    assert criterion.is_finished()
    with pytest.raises(ValueError, match="unknown stopping criterion"):
        make_criterion("vibes")


def test_summary_statistics():
    summary = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (summary.count, summary.median, summary.minimum, summary.maximum) == (5, 3.0, 1.0, 100.0)
    assert summary.mean == pytest.approx(22.0)
    assert summary.cv == pytest.approx(summary.stdev / 22.0)
