"""transpose: the oracle, the generators, the metadata and the exact tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness.validation import compare

CASES = ChallengeCases("transpose")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 5), (5, 1), (3, 7), (40, 33)])
def test_reference_matches_scalar_loop(rows: int, cols: int) -> None:
    sizes = dict(rows=rows, cols=cols)
    x = REF.generate_inputs("wide_range", sizes, np.random.default_rng(1))["input"]
    expected = np.zeros((cols, rows))
    for r in range(rows):
        for c in range(cols):
            expected[c, r] = x[r, c]
    out = REF.reference({"input": x}, sizes)["output"]
    assert out.shape == CASES.shape_of("output", sizes)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(rows=1, cols=1), dict(rows=3, cols=65536), dict(rows=65536, cols=2)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(rows=1, cols=1), np.random.default_rng(0))


def test_metadata_covers_the_shapes_that_break_transposes() -> None:
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert any(s["rows"] == 1 and s["cols"] > 1 for s in sizes) and any(s["cols"] == 1 and s["rows"] > 1 for s in sizes)
    assert any(s["rows"] % 32 and s["cols"] % 32 and s["rows"] != s["cols"] for s in sizes)
    for k in ("rows", "cols"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert PERFORMANCE["sizes"]["rows"] != PERFORMANCE["sizes"]["cols"]
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 268_435_456


def test_tolerance_is_exact_and_rejects_a_half_precision_copy() -> None:
    assert (CH.tolerance.atol, CH.tolerance.rtol) == (0.0, 0.0)
    case = next(c for c in FUNCTIONAL if c["distribution"] == "normal" and c["sizes"]["rows"] > 1 and c["sizes"]["cols"] > 1)
    x, ref = CASES.case_inputs(case)["input"], CASES.case_reference(case)
    exact = compare(np, "output", np.ascontiguousarray(x.T), ref, CH.tolerance)
    assert exact.mismatches == 0
    half = compare(np, "output", np.ascontiguousarray(x.T.astype(np.float16).astype(np.float32)), ref, CH.tolerance)
    assert half.mismatches > 0.9 * ref.size
