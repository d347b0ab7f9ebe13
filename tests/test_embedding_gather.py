"""embedding_gather: the oracle, the generators, the metadata and the exact tolerance.

CPU only. A gather moves values and computes nothing, so the policy is
exactness: a copy through half precision, a row copied from the wrong index
or a dropped row tail fails (tests/variants/embedding_gather runs such
mistakes as CUDA).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness import expressions
from harness.validation import compare

CASES = ChallengeCases("embedding_gather")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]


def generated(distribution: str, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """generate_inputs keeps its contract: int32 indices in [0, vocab), a finite
    float32 table of shape (vocab, dim), the constraints, reproducible."""
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    indices, table = inputs["indices"], inputs["table"]
    assert indices.dtype == np.int32 and indices.shape == (sizes["num_indices"],)
    assert table.dtype == np.float32 and table.shape == (sizes["vocab"], sizes["dim"])
    assert indices.min() >= 0 and indices.max() < sizes["vocab"] and np.isfinite(table).all()
    for constraint in CH.constraints:
        assert bool(expressions.evaluate(constraint, {**sizes, **inputs})), constraint
    for name in inputs:
        np.testing.assert_array_equal(inputs[name], again[name])
    return inputs


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_a_copying_loop(distribution: str) -> None:
    sizes = {"num_indices": 301, "vocab": 53, "dim": 7}
    inputs = generated(distribution, sizes)
    loop = np.empty((301, 7))
    for i, row in enumerate(inputs["indices"].tolist()):
        for d in range(7):
            loop[i, d] = float(inputs["table"][row, d])
    out = REF.reference(inputs, sizes)["output"]
    assert out.dtype == np.float64 and out.shape == (301, 7)
    np.testing.assert_array_equal(out, loop)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize(
    "sizes",
    [{"num_indices": 1, "vocab": 1, "dim": 1}, {"num_indices": 3, "vocab": 2, "dim": 5}, {"num_indices": 1000, "vocab": 4099, "dim": 12}],
)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    generated(distribution, sizes)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"num_indices": 4, "vocab": 4, "dim": 4}, np.random.default_rng(0))


def test_distributions_match_their_descriptions() -> None:
    sizes = {"num_indices": 20000, "vocab": 1000, "dim": 4}
    uniform = generated("uniform", sizes)["indices"]
    assert np.unique(uniform).size > 990  # nearly every row used
    assert np.unique(generated("one_row", sizes)["indices"]).size == 1
    assert np.all(np.diff(generated("sorted", sizes)["indices"]) >= 0)
    bounds = generated("bounds", sizes)["indices"]
    assert set(np.unique(bounds).tolist()) == {0, 999} and 0.4 < (bounds == 0).mean() < 0.6
    wide = np.abs(generated("wide_range", sizes)["table"].astype(np.float64))
    assert wide.min() < 1e-25 and wide.max() > 1e25  # outside half precision both ways


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["indices", "table", "output", "num_indices", "vocab", "dim"]
    assert CH.tolerance.atol == 0 and CH.tolerance.rtol == 0  # a copy is exact
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= {s["num_indices"] for s in sizes}
    assert {1, 3, 5, 6, 255, 257} <= {s["dim"] for s in sizes}  # dims a float4 (and a float2) copy must handle
    assert any(s["vocab"] == 1 for s in sizes)
    assert any(s["dim"] > 4096 for s in sizes)  # rows longer than any block
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert FUNCTIONAL[0]["sizes"]["num_indices"] * FUNCTIONAL[0]["sizes"]["dim"] > 65536  # the repeated call spans many blocks


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    assert sizes == {"num_indices": 262144, "vocab": 200000, "dim": 256}
    assert CH.cost_of("bytes", sizes) == 4 * 262144 + 2 * 4 * 262144 * 256  # 537.9 MB, ten times the L2
    assert 4 * sizes["vocab"] * sizes["dim"] > 4 * 50e6  # the table itself is 4x the 50 MB L2


# ---------------------------------------------------------------------------
# exactness, both ways: the comparison the harness makes


@pytest.mark.parametrize("case", FUNCTIONAL, ids=[c["name"] for c in FUNCTIONAL])
def test_an_exact_copy_passes_and_lossy_or_misplaced_ones_fail(case: dict[str, Any]) -> None:
    inputs, ref = CASES.case_inputs(case), CASES.case_reference(case)
    exact = inputs["table"][inputs["indices"]]
    assert compare(np, "output", exact, ref, CH.tolerance).passed
    off_by_one_bit = exact.copy()
    off_by_one_bit.view(np.uint32)[-1, -1] ^= 1  # the last element of the last row, one ulp
    assert compare(np, "output", off_by_one_bit, ref, CH.tolerance).mismatches == 1
    with np.errstate(over="ignore"):  # wide_range overflows half precision: that is the point
        through_half = exact.astype(np.float16).astype(np.float32)
    assert compare(np, "output", through_half, ref, CH.tolerance).mismatches > 0.9 * exact.size


def test_a_row_from_the_neighbouring_index_fails() -> None:
    case = FUNCTIONAL[0]
    inputs, ref = CASES.case_inputs(case), CASES.case_reference(case)
    shifted = inputs["table"][(inputs["indices"] + 1) % case["sizes"]["vocab"]]
    assert compare(np, "output", shifted, ref, CH.tolerance).mismatches == shifted.size
