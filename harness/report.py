"""Reports: the leaderboard table for terminals and the JSON document for machines.

Statistics are computed here from raw samples; nothing upstream rounds.
"""

from __future__ import annotations

from rich.table import Table

from .challenge import Challenge
from .results import REASONS, SolutionResult
from .stats import Summary, summarize


def timing_summary(result: SolutionResult) -> Summary | None:
    if result.timing is None or not result.timing.gpu_time_s:
        return None
    return summarize(result.timing.gpu_time_s)


def reference_median(results: list[SolutionResult]) -> float | None:
    for result in results:
        summary = timing_summary(result)
        if result.is_reference and result.passed and summary is not None:
            return summary.median
    return None


def ranked(results: list[SolutionResult]) -> list[SolutionResult]:
    """Passing and timed first, fastest first; then passing untimed; then failures."""

    def key(result: SolutionResult) -> tuple[int, float, str]:
        summary = timing_summary(result)
        if result.passed and summary is not None:
            return (0, summary.median, result.solution)
        return (1 if result.passed else 2, 0.0, result.solution)

    return sorted(results, key=key)


def failure_note(result: SolutionResult) -> str:
    if result.passed:
        return ""
    sentence = REASONS.get(result.reason or "", result.reason or "failed")
    first_line = result.message.strip().splitlines()[0] if result.message.strip() else ""
    return f"{sentence}: {first_line}" if first_line else sentence


def format_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def leaderboard(challenge: Challenge, results: list[SolutionResult], backend: str) -> Table:
    """One row per solution, fastest passing first; failure reasons go in
    `failure_lines` under the table, where long sentences do not squeeze columns."""
    timed = backend == "cuda" and any(r.timing for r in results)
    title = f"{challenge.name} on {backend}"
    device = next((r.timing.device for r in results if r.timing), "")
    if device:
        title += f" ({device})"
    table = Table(title=title, title_justify="left")
    table.add_column("solution", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("tests", justify="right", no_wrap=True)
    if timed:
        for column in ("median", "cv", "min", "vs ref", "GB/s", "% copy BW", "samples"):
            table.add_column(column, justify="right", no_wrap=True)
    ref_median = reference_median(results)
    for result in ranked(results):
        passed_tests = sum(t.passed for t in result.tests)
        status = "[green]PASS[/green]" if result.passed else f"[red]{result.reason or 'FAIL'}[/red]"
        row = [result.solution, status, f"{passed_tests}/{len(result.tests)}" if result.tests else "-"]
        if timed:
            row += timing_cells(result, ref_median)
        table.add_row(*row)
    return table


def failure_lines(results: list[SolutionResult]) -> list[str]:
    """A sentence per failed solution, then notes a reader should not miss."""
    lines = []
    for result in ranked(results):
        if not result.passed:
            lines.append(f"{result.solution}: {failure_note(result)}")
        if result.timing and result.timing.stop_reason == "time_budget":
            lines.append(f"{result.solution}: time budget reached after {len(result.timing.gpu_time_s)} timed calls")
        if result.stdout_bytes > 64 * 1024:
            lines.append(f"{result.solution}: printed {result.stdout_bytes / 1e6:.1f} MB on stdout")
    return lines


def _figure(value: float) -> str:
    """Three significant figures, but no exponent for numbers in the hundreds and up."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def timing_cells(result: SolutionResult, ref_median: float | None) -> list[str]:
    summary = timing_summary(result)
    if summary is None or result.timing is None:
        return ["-"] * 7
    speedup = _figure(ref_median / summary.median) + "x" if ref_median else "-"
    moved = result.timing.bytes_moved
    rate = moved / summary.median if moved else None
    copy = result.timing.copy_bandwidth_bytes_per_s
    return [
        format_time(summary.median),
        f"{summary.cv * 100:.1f}%",
        format_time(summary.minimum),
        "ref" if result.is_reference else speedup,
        _figure(rate / 1e9) if rate else "-",
        _figure(100 * rate / copy) + "%" if rate and copy else "-",
        str(summary.count),
    ]
