"""Reports: the leaderboard table for terminals and the JSON document for machines.

Statistics are computed here from raw samples; nothing upstream rounds.
"""

from __future__ import annotations

import math

from rich.table import Table

from .challenge import Challenge
from .results import REASONS, Reason, SolutionResult, TestResult
from .stats import Summary, summarize
from .timing.loop import StopReason

STDOUT_LINES = 10  # of a solution's own output shown under its verdict (the JSON has all of its tail)
LINE_WIDTH = 160  # longer lines of that output are cut


def timing_summary(result: SolutionResult) -> Summary | None:
    if result.timing is None or not result.timing.gpu_time_s:
        return None
    return summarize(result.timing.gpu_time_s)


def reference_median(results: list[SolutionResult]) -> float | None:
    """The median of the passing reference among `results` (of one challenge on one GPU)."""
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
    """The sentence of a failure and its message; a compiler's diagnostics in full (they are shown once)."""
    if result.passed:
        return ""
    sentence = REASONS[result.reason] if result.reason else "failed"
    message = result.message.strip()
    if result.reason != Reason.COMPILE_ERROR:
        message = message.splitlines()[0] if message else ""
    return f"{sentence}: {message}" if message else sentence


def format_time(seconds: float) -> str:
    """Three significant figures in the unit that fits: s, ms, us, or ns (plot axes reach below 1 us)."""
    if seconds <= 0 or not math.isfinite(seconds):
        return "0"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


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


def failure_lines(results: list[SolutionResult], verbose: bool = False) -> list[str]:
    """Under the table, per solution: the failure's sentence and the failing
    tests by name (every test with -v), then its own output (trimmed) and
    notes a reader should not miss."""
    lines = []
    for result in ranked(results):
        if not result.passed:
            first, *rest = failure_note(result).splitlines() or [""]
            lines += [f"{result.solution}: {first}", *(f"  {line}" for line in rest)]
        failing = [t.name for t in result.tests if not t.passed and t.reason != Reason.NOT_RUN]
        if verbose:
            lines.extend(f"  {test_line(t)}" for t in result.tests)
        elif failing:
            not_run = sum(t.reason == Reason.NOT_RUN for t in result.tests)
            lines.append(f"  failed: {', '.join(failing)}" + (f" ({not_run} not run after it)" if not_run else ""))
        lines.extend(_output_lines(result))
        if result.timing and result.timing.clock_note:
            lines.append(f"{result.solution}: the GPU clock did not hold while it was timed ({result.timing.clock_note}): compare with care")
        if result.timing and result.timing.stop_reason == StopReason.TIME_BUDGET:
            lines.append(f"{result.solution}: time budget reached after {len(result.timing.gpu_time_s)} timed calls")
    return lines


def test_line(test: TestResult) -> str:
    if test.passed:
        return f"PASS {test.name} ({test.duration_s:.2f} s)"
    first = test.message.strip().splitlines()[0] if test.message.strip() else ""
    return f"{'FAIL' if test.reason != Reason.NOT_RUN else '----'} {test.name}: {test.reason}" + (f": {first}" if first else "")


def _output_lines(result: SolutionResult) -> list[str]:
    """The solution's stdout (device printf): its last lines, cut to LINE_WIDTH."""
    text = result.stdout_tail.rstrip()
    if not text:
        return []
    lines = text.splitlines()
    shown = [line[:LINE_WIDTH] + (" ..." if len(line) > LINE_WIDTH else "") for line in lines[-STDOUT_LINES:]]
    size = f"{result.stdout_bytes / 1e6:.1f} MB" if result.stdout_bytes >= 100_000 else f"{result.stdout_bytes} bytes"
    cut = f", the last {len(shown)} lines" if len(lines) > len(shown) else ""
    kept = "--json has all of it" if result.stdout_bytes <= len(result.stdout_tail.encode()) else f"--json has its last {len(result.stdout_tail.encode()) // 1024} KB"
    return [f"{result.solution}: printed {size} on stdout{cut} ({kept}):", *(f"  | {line}" for line in shown)]


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
