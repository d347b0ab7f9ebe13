"""How well a measurement repeats: the same solutions timed in separate runs,
their medians and their speedups against the reference side by side, and the
spread of each across the runs ((max - min) / median of the runs' values).

Works on report documents (the JSON report), so it needs no GPU to test and
reads `harness bench --repeat N` runs and saved reports alike."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Repeatability:
    key: str  # "challenge/solution"
    medians_s: tuple[float, ...]  # one per run in which it was timed
    speedups: tuple[float, ...]  # against the reference of the same run; empty for the reference itself

    @property
    def median_spread(self) -> float | None:
        return spread(self.medians_s)

    @property
    def speedup_spread(self) -> float | None:
        return spread(self.speedups)


def spread(values: tuple[float, ...]) -> float | None:
    """(max - min) / median: 0.01 means the runs agree to within 1 %."""
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / statistics.median(values)


def repeatability(reports: list[dict[str, Any]]) -> list[Repeatability]:
    """Per timed solution, in the order of the first report."""
    medians: dict[str, list[float]] = {}
    speedups: dict[str, list[float]] = {}
    for report in reports:
        for record in report["results"]:
            timing = record.get("timing")
            if not timing or not record["passed"] or "summary_gpu_time_s" not in timing:
                continue
            key = f"{record['challenge']}/{record['solution']}"
            medians.setdefault(key, []).append(timing["summary_gpu_time_s"]["median"])
            if timing.get("speedup_vs_reference") and not record["is_reference"]:
                speedups.setdefault(key, []).append(timing["speedup_vs_reference"])
    return [Repeatability(key, tuple(values), tuple(speedups.get(key, ()))) for key, values in medians.items()]
