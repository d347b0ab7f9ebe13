"""`bench --repeat`'s arithmetic on report documents: each solution's medians and
speedups across runs, and their spread."""

from __future__ import annotations

import pytest

from harness.repeatability import repeatability, spread
from report_support import synthetic_cuda_report

SOLUTION = "solutions/ssm_selective_scan/chunked.cu"


def test_spread_is_range_over_median():
    assert spread((100.0, 101.0, 99.0)) == pytest.approx(0.02)
    assert spread((5.0,)) is None


def test_runs_line_up_per_solution_with_speedups_from_their_own_run():
    runs = [synthetic_cuda_report({SOLUTION: m}, reference_median_s=r, failing=("solutions/ssm_selective_scan/bad.cu",))
            for m, r in ((124e-6, 88e-6), (125e-6, 89e-6), (123e-6, 88.5e-6))]
    rows = {row.key: row for row in repeatability(runs)}
    assert set(rows) == {"ssm_selective_scan/reference/ssm_selective_scan.cu", f"ssm_selective_scan/{SOLUTION}"}
    solution, reference = rows[f"ssm_selective_scan/{SOLUTION}"], rows["ssm_selective_scan/reference/ssm_selective_scan.cu"]
    assert len(solution.medians_s) == 3 and len(solution.speedups) == 3 and reference.speedups == ()
    for run, speedup in zip(runs, solution.speedups):
        record = next(r for r in run["results"] if r["solution"] == SOLUTION)
        assert speedup == record["timing"]["speedup_vs_reference"]
    assert 0 < solution.median_spread < 0.1 and solution.speedup_spread is not None
