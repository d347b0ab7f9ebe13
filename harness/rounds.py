"""Timing in rounds: a solution's later timing rounds folded into its result.

Every round is a fresh worker timing the performance test alone, with every
timed call verified as in the first; the samples of all rounds make one
measurement, and a round that fails fails the solution."""

from __future__ import annotations

from dataclasses import replace

from .results import SolutionResult


def merged(first: SolutionResult, later: SolutionResult, round_number: int) -> SolutionResult:
    """`first` (tests and the first round) with the samples of `later`, or failed as `later` failed."""
    result = replace(first, duration_s=first.duration_s + later.duration_s)
    if not later.passed or later.timing is None or first.timing is None:
        assert later.reason is not None, "a timing round without samples must say why"
        return result.fail(later.reason, f"timing round {round_number}: {later.message}")
    before, after = first.timing, later.timing
    result.timing = replace(
        before,
        gpu_time_s=before.gpu_time_s + after.gpu_time_s,
        wall_time_s=before.wall_time_s + after.wall_time_s,
        stop_reason=after.stop_reason,
        escaped=before.escaped or after.escaped,
        gpu_state_after=after.gpu_state_after,
        clock_note=before.clock_note or after.clock_note,
    )
    return result
