"""row_topk: the oracle, the generators, the metadata and the exact tolerance.

CPU only. Keys and columns are copied, never computed, and the order is
unique, so the policy is exactness; what it must reject are the mistakes of
tests/variants/row_topk, emulated here on the test data: equal keys by the
larger column first, keys compared as unsigned, -key negated in 32 bits
(INT_MIN stays INT_MIN), the last cols % 4 columns dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness import expressions
from harness.testdata import make_inputs
from harness.validation import compare

CASES = ChallengeCases("row_topk")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
LIMITS = {p["name"]: (p["min"], p["max"]) for p in CFG["params"] if p["role"] == "size"}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def top_k_by(order_key: Callable[[np.ndarray], np.ndarray], keys: np.ndarray, k: int, ties_by_column: int = 1,
             scanned: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """int32 values and indices of a solution ranking by order_key(keys)
    descending, equal ones by column ascending (ties_by_column=1) or descending
    (-1), over the first `scanned` columns."""
    cols = keys.shape[1] if scanned is None else scanned
    rank = order_key(keys[:, :cols].astype(np.int64))
    column = np.broadcast_to(np.arange(cols) * ties_by_column, rank.shape)
    order = np.lexsort((column, -rank), axis=1)[:, :k]
    if order.shape[1] < k:  # fewer columns than k scanned: the rest left as zeros
        order = np.concatenate([order, np.zeros((order.shape[0], k - order.shape[1]), np.int64)], axis=1)
    return np.take_along_axis(keys, order, axis=1).astype(np.int32), order.astype(np.int32)


def signed(keys: np.ndarray) -> np.ndarray:
    return keys


def as_unsigned(keys: np.ndarray) -> np.ndarray:
    return keys & 0xFFFFFFFF


def negated_in_32_bits(keys: np.ndarray) -> np.ndarray:
    """-(-key) with the negation wrapping in int32: INT_MIN stays INT_MIN and ranks first."""
    negated = (-keys + 2**31) % 2**32 - 2**31
    return -negated


def passes(result: tuple[np.ndarray, np.ndarray], expected: dict[str, np.ndarray]) -> bool:
    values, indices = result
    return (
        compare(np, "values", values, expected["values"], CH.tolerance).passed
        and compare(np, "indices", indices, expected["indices"], CH.tolerance).passed
    )


def check_generated(distribution: str, sizes: dict[str, int]) -> np.ndarray:
    """generate_inputs keeps its contract: int32 keys of shape (rows, cols), never the marker, reproducible."""
    keys = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))["input"]
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))["input"]
    assert keys.dtype == np.int32 and keys.shape == (sizes["rows"], sizes["cols"])
    np.testing.assert_array_equal(keys, again)
    for constraint in CH.constraints:
        assert bool(expressions.evaluate(constraint, {**sizes, "input": keys})), constraint
    return keys


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_a_sort_of_each_row(distribution: str) -> None:
    sizes = {"rows": 13, "cols": 211, "k": 37}
    keys = check_generated(distribution, sizes)
    out = REF.reference({"input": keys.astype(np.float64)}, sizes)
    for r, row in enumerate(keys.tolist()):
        ranked = sorted(range(len(row)), key=lambda c: (-row[c], c))[: sizes["k"]]
        assert out["indices"][r].tolist() == ranked
        assert out["values"][r].tolist() == [row[c] for c in ranked]


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [{"rows": 1, "cols": 1, "k": 1}, {"rows": 3, "cols": 16384, "k": 64}, {"rows": 1001, "cols": 5, "k": 5}])
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    check_generated(distribution, sizes)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"rows": 1, "cols": 4, "k": 1}, np.random.default_rng(0))


def test_the_marker_is_never_a_key() -> None:
    """The uniform generator maps the unwritten-output marker to its neighbour."""
    class Always:
        def integers(self, low: int, high: int, shape: Any, **_: Any) -> np.ndarray:
            return np.full(shape, REF.UNWRITTEN_MARKER, dtype=np.int64)

    keys = REF.generate_inputs("uniform", {"rows": 2, "cols": 3, "k": 1}, Always())["input"]  # type: ignore[arg-type]
    assert (keys == REF.UNWRITTEN_MARKER - 1).all()


def test_distributions_match_their_descriptions() -> None:
    sizes = {"rows": 64, "cols": 2000, "k": 8}
    keys = {d: check_generated(d, sizes) for d in CFG["distributions"]}
    assert keys["uniform"].min() < -(2**30) and keys["uniform"].max() > 2**30
    assert all(len(np.unique(row)) <= 5 for row in keys["few_distinct"])
    assert (keys["all_equal"] == keys["all_equal"][:, :1]).all()
    assert (np.diff(keys["ascending"].astype(np.int64), axis=1) >= 0).all()
    assert (np.diff(keys["descending"].astype(np.int64), axis=1) <= 0).all()
    assert set(np.unique(keys["extremes"]).tolist()) == {INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX}
    for row in keys["tied_top"]:  # the 1st, 9th and 30th largest keys 4 times each, the rest distinct
        values, counts = np.unique(row, return_counts=True)
        assert counts[-1] == 4 and sorted(counts[counts > 1]) == [4, 4, 4]
        assert values[-9:][counts[-9:] > 1].size == 2  # the largest and the 9th largest: among the 9 largest values


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "values", "indices", "rows", "cols", "k"]
    assert CH.tolerance.atol == 0 and CH.tolerance.rtol == 0
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= {s["cols"] for s in sizes}
    assert any(s["k"] == s["cols"] == LIMITS["k"][1] for s in sizes)  # k = cols = 64
    assert any(s["cols"] == LIMITS["cols"][1] for s in sizes)  # the widest rows: 16 chunks of 1024
    assert any(s["cols"] % 4 and s["cols"] > 1024 for s in sizes)  # a partial last chunk, unaligned rows
    assert any(32 < s["k"] < 64 for s in sizes) and any(s["k"] == 1 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert FUNCTIONAL[0]["sizes"]["rows"] > 128  # the repeated-call test spans many blocks


def test_cost_model_at_the_official_size() -> None:
    assert PERFORMANCE["sizes"] == {"rows": 65536, "cols": 1024, "k": 32}
    moved = CH.cost_of("bytes", PERFORMANCE["sizes"])
    assert moved == 4 * 65536 * 1024 + 8 * 65536 * 32 and moved > 100e6  # past the 50 MB L2
    assert moved / 4.0e12 > 20e-6


# ---------------------------------------------------------------------------
# exactness, both ways: the comparison the harness makes


def case_data(case: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    keys = make_inputs(CH, CH.test(case["name"]))["input"]
    return keys, REF.reference({"input": keys.astype(np.float64)}, case["sizes"])


MISTAKES: dict[str, dict[str, Any]] = {
    "ties_to_larger_column": {"order_key": signed, "ties_by_column": -1},
    "unsigned_keys": {"order_key": as_unsigned},
    "negated_keys": {"order_key": negated_in_32_bits},
    "dropped_tail_int4": {"order_key": signed, "scanned": "cols % 4"},
}


def mistake(name: str, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    options = dict(MISTAKES[name])
    if options.get("scanned") == "cols % 4":
        options["scanned"] = keys.shape[1] - keys.shape[1] % 4
    return top_k_by(keys=keys, k=k, **options)


@pytest.mark.parametrize("case", FUNCTIONAL, ids=[c["name"] for c in FUNCTIONAL])
def test_exact_answer_passes(case: dict[str, Any]) -> None:
    keys, expected = case_data(case)
    assert passes(top_k_by(signed, keys, case["sizes"]["k"]), expected)


@pytest.mark.parametrize("name", list(MISTAKES))
def test_every_mistake_fails_the_example_or_a_functional_test(name: str) -> None:
    example = CFG["tests"]["example"]
    keys = np.asarray(example["inputs"]["input"], dtype=np.int32)
    expected = {n: np.asarray(v, dtype=np.float64) for n, v in example["expected"].items()}
    failed = [] if passes(mistake(name, keys, example["sizes"]["k"]), expected) else ["example"]
    for case in FUNCTIONAL:
        keys, expected = case_data(case)
        if not passes(mistake(name, keys, case["sizes"]["k"]), expected):
            failed.append(case["name"])
    assert failed, name
    # and the first test the harness runs that can show it does
    assert failed[0] in ("example", FUNCTIONAL[0]["name"]), failed
