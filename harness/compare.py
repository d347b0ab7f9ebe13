"""Compare two reports, solution by solution: faster, slower or the same, by a
noise-aware rule in the spirit of nvbench's compare script.

A difference of medians smaller than the larger coefficient of variation of
the two sample sets is noise ("same"). A slowdown beyond both the noise and the
threshold is a regression, as is a solution that passed before and fails now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import TextEnum
from .stats import summarize


class ChangeStatus(TextEnum):
    FASTER = "faster"
    SLOWER = "slower"
    SAME = "same"  # within the noise
    NOW_FAILING = "now failing"
    NOW_PASSING = "now passing"
    NEW = "new"
    GONE = "gone"
    UNTIMED = "untimed"


@dataclass(frozen=True)
class Change:
    key: str
    status: ChangeStatus
    base_median_s: float | None = None
    new_median_s: float | None = None
    noise: float | None = None  # relative

    @property
    def relative_change(self) -> float | None:
        if self.base_median_s and self.new_median_s:
            return self.new_median_s / self.base_median_s - 1
        return None


def _index(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{r['challenge']}/{r['solution']}": r for r in document["results"] if not r["baseline"]}


def _samples(record: dict[str, Any]) -> list[float]:
    timing = record.get("timing") or {}
    return timing.get("gpu_time_s") or []


def classify(base: list[float], new: list[float]) -> tuple[ChangeStatus, float, float, float]:
    """(status, base median, new median, noise) for two sample sets."""
    b, n = summarize(base), summarize(new)
    noise = max(b.cv, n.cv)
    change = n.median / b.median - 1
    if abs(change) <= noise:
        return ChangeStatus.SAME, b.median, n.median, noise
    return (ChangeStatus.SLOWER if change > 0 else ChangeStatus.FASTER), b.median, n.median, noise


def compare_reports(base: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    before, after = _index(base), _index(new)
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            changes.append(Change(key, ChangeStatus.GONE))
        elif key not in before:
            changes.append(Change(key, ChangeStatus.NEW))
        elif before[key]["passed"] and not after[key]["passed"]:
            changes.append(Change(key, ChangeStatus.NOW_FAILING))
        elif not before[key]["passed"] and after[key]["passed"]:
            changes.append(Change(key, ChangeStatus.NOW_PASSING))
        elif _samples(before[key]) and _samples(after[key]):
            status, b, n, noise = classify(_samples(before[key]), _samples(after[key]))
            changes.append(Change(key, status, b, n, noise))
        else:
            changes.append(Change(key, ChangeStatus.UNTIMED))
    return changes


def regressions(changes: list[Change], threshold: float) -> list[Change]:
    """Slowdowns beyond noise and `threshold` (relative), and new failures."""
    return [
        c
        for c in changes
        if c.status == ChangeStatus.NOW_FAILING or (c.status == ChangeStatus.SLOWER and (c.relative_change or 0.0) > threshold)
    ]
