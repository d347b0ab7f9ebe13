"""Reports from synthetic results: the leaderboard layout (golden file), the
ranking, speedups and bandwidth, and the JSON document."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from harness.challenge import load_challenge
from harness.report import failure_lines, leaderboard, ranked, timing_cells
from harness.results import SolutionResult, TestResult, TimingResult

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("golden") / "leaderboard.txt"
SIZES = {"batch": 4, "seq_len": 4096, "d_model": 512, "d_state": 16}


def timed(label: str, median_us: float, reference: bool = False) -> SolutionResult:
    samples = [median_us * 1e-6 * f for f in (0.98, 1.0, 1.0, 1.02, 1.05)]
    timing = TimingResult(
        test="official", sizes=SIZES, gpu_time_s=samples, wall_time_s=[s + 10e-6 for s in samples],
        call_overhead_s=8e-6, stop_reason="converged", bytes_moved=102.8e6,
        copy_bandwidth_bytes_per_s=4.2e12, escaped=False, device="NVIDIA H200",
    )
    tests = [TestResult("example", "example", {}, True), TestResult("official", "performance", SIZES, True)]
    return SolutionResult(solution=label, backend="cuda", is_reference=reference, passed=True, tests=tests, timing=timing)


def results() -> list[SolutionResult]:
    wrong = SolutionResult(solution="solutions/x/wrong.cu", backend="cuda", tests=[TestResult("example", "example", {}, False, "wrong_output", "y: 3 of 8 elements out of tolerance")])
    wrong.fail("wrong_output", "example: y: 3 of 8 elements out of tolerance")
    broken = SolutionResult(solution="solutions/x/broken.cu", backend="cuda").fail("compile_error", "broken.cu:3: error: expected ';'\nbroken.cu:9: error: 'y' undeclared")
    printing = timed("solutions/x/chunked.cu", 280.0)
    printing.stdout_tail = "".join(f"block {i}: partial sum {i * 0.5}\n" for i in range(12))
    printing.stdout_bytes = len(printing.stdout_tail)
    skipped = SolutionResult(solution="solutions/x/mine.py", backend="cuda").fail("skipped", "Python solutions need CuPy and a GPU")
    return [wrong, timed("solutions/x/naive.cu", 2.8e6), broken, timed("reference/x.cu", 100.0, reference=True), printing, skipped]


def render(table) -> str:
    console = Console(width=150, record=True, color_system=None, force_terminal=False)
    console.print(table)
    return console.export_text()


def test_leaderboard_layout_matches_the_golden_file():
    challenge = load_challenge("ssm_selective_scan", REPO)
    text = render(leaderboard(challenge, results(), "cuda")) + "\n".join(failure_lines(results())) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_ranking_puts_fastest_passing_first_and_failures_last():
    order = [r.solution for r in ranked(results())]
    assert order == [
        "reference/x.cu", "solutions/x/chunked.cu", "solutions/x/naive.cu", "solutions/x/broken.cu", "solutions/x/mine.py", "solutions/x/wrong.cu",
    ]


def test_verbose_lists_every_test_and_plain_lists_the_failing_ones():
    wrong = SolutionResult(solution="w.cu", backend="emu", tests=[
        TestResult("example", "example", {}, True, duration_s=0.01),
        TestResult("odd_sizes", "functional", {}, False, "wrong_output", "y: 3 of 8 elements out of tolerance"),
        TestResult("long", "functional", {}, False, "not_run", "an earlier failure ended the run"),
    ]).fail("wrong_output", "odd_sizes: y: 3 of 8 elements out of tolerance")
    plain = failure_lines([wrong])
    assert plain[1] == "  failed: odd_sizes (1 not run after it)"
    verbose = failure_lines([wrong], verbose=True)
    assert verbose[1:] == [
        "  PASS example (0.01 s)",
        "  FAIL odd_sizes: wrong_output: y: 3 of 8 elements out of tolerance",
        "  ---- long: not_run: an earlier failure ended the run",
    ]


def test_a_compile_error_is_shown_once_in_full():
    lines = "\n".join(failure_lines(results()))
    assert lines.count("expected ';'") == 1 and "'y' undeclared" in lines


def test_cells_compute_speedup_bandwidth_and_share_of_copy_rate():
    cells = timing_cells(timed("a", 200.0), ref_median=100e-6)
    median, cv, minimum, speedup, rate, share, count = cells
    assert median == "200 us" and speedup == "0.5x" and count == "5"
    assert rate == "514" and share == "12.2%"  # 102.8 MB in 200 us, against 4.2 TB/s
