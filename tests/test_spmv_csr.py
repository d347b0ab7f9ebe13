"""spmv_csr: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The float32 emulations below stand in for GPU solutions: each sums a
row's products in an order a CSR kernel uses (one thread per row in order; 32
lanes with a shuffle tree; pieces cut at tile boundaries and added by atomics
in any order), and the tolerance must accept all of them and reject a dropped
entry and half-precision partial sums. `python tests/test_spmv_csr.py` prints
the measurements of spec.md, "Tolerance", on the official matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness import expressions

F32 = np.float32
CASES = ChallengeCases("spmv_csr")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
MAX_ROW_LENGTH = 2**20  # spec.md, "Constraints": the tolerance is calibrated for rows up to this long

# ---------------------------------------------------------------------------
# float32 row sums in the orders GPU kernels use, vectorised over rows


def lane_sums(row_ptr: np.ndarray, terms: np.ndarray, lanes: int, dtype: type = F32, long_row: int = 4096) -> np.ndarray:
    """partial[r, l]: lane l of row r adds the row's entries l, l + lanes, ... in order."""
    rows = row_ptr.size - 1
    lengths = np.diff(row_ptr)
    acc = np.zeros((rows, lanes), dtype)
    entry_row = np.repeat(np.arange(rows), lengths)
    position = np.arange(terms.size) - np.repeat(row_ptr[:-1], lengths)
    short = (lengths <= long_row)[entry_row]
    row, pos, term = entry_row[short], position[short], terms[short].astype(dtype)
    step, lane = pos // lanes, pos % lanes
    order = np.argsort(step, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(step, minlength=1))))
    for s in range(bounds.size - 1):  # step by step: (row, lane) pairs are distinct within a step
        i = order[bounds[s] : bounds[s + 1]]
        acc[row[i], lane[i]] = acc[row[i], lane[i]] + term[i]
    for r in np.flatnonzero(lengths > long_row):  # long rows one by one: cumsum is sequential
        t = np.zeros(-(-lengths[r] // lanes) * lanes, dtype)
        t[: lengths[r]] = terms[row_ptr[r] : row_ptr[r + 1]]
        acc[r] = np.cumsum(t.reshape(-1, lanes), axis=0, dtype=dtype)[-1]
    return acc


def shuffle_tree(acc: np.ndarray) -> np.ndarray:
    """Lane 0 after a halving tree of shuffles (offsets 16, 8, 4, 2, 1)."""
    while acc.shape[1] > 1:
        half = acc.shape[1] // 2
        acc = acc[:, :half] + acc[:, half:]
    return acc[:, 0]


def tiles_and_atomics(row_ptr: np.ndarray, terms: np.ndarray, tile: int = 2048, seed: int = 1) -> np.ndarray:
    """Rows cut where they cross a boundary of tiles of `tile` entries, each piece
    summed in float32, the pieces of a row added one by one in a random order."""
    rows = row_ptr.size - 1
    y = np.zeros(rows, F32)
    if terms.size == 0:
        return y
    starts = np.union1d(row_ptr, np.arange(0, terms.size, tile))
    starts = starts[starts < terms.size]
    pieces = np.add.reduceat(terms, starts)
    piece_row = np.searchsorted(row_ptr, starts, side="right") - 1
    rng = np.random.default_rng(seed)
    counts = np.bincount(piece_row, minlength=rows)
    single = counts[piece_row] == 1
    y[piece_row[single]] = pieces[single]
    for r in np.flatnonzero(counts > 1):
        y[r] = np.cumsum(rng.permutation(pieces[piece_row == r]), dtype=F32)[-1]
    return y


def dropped_last_entry(row_ptr: np.ndarray, terms: np.ndarray) -> np.ndarray:
    lengths = np.diff(row_ptr)
    kept = terms.astype(np.float64)
    kept[row_ptr[1:][lengths > 0] - 1] = 0.0
    return np.bincount(np.repeat(np.arange(lengths.size), lengths), weights=kept, minlength=lengths.size)


RowSums = Callable[[np.ndarray, np.ndarray], np.ndarray]
CORRECT_ORDERS: dict[str, RowSums] = {
    "thread_per_row": lambda rp, t: lane_sums(rp, t, 1)[:, 0],  # naive.cu
    "warp_per_row": lambda rp, t: shuffle_tree(lane_sums(rp, t, 32)),  # warp_per_row.cu
    "tiles_atomics": tiles_and_atomics,  # merge-path or row-splitting kernels
    "tiles_256_atomics": lambda rp, t: tiles_and_atomics(rp, t, tile=256),  # reference/spmv_csr.cu's warp tiles
}
WRONG_ORDERS: dict[str, RowSums] = {
    "half_accumulators": lambda rp, t: shuffle_tree(lane_sums(rp, t, 32, np.float16)).astype(F32),
    "dropped_last_entry": dropped_last_entry,
}


def products(inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """row_ptr (int64) and the float32 products values[k] * x[col_idx[k]] a kernel forms."""
    return inputs["row_ptr"].astype(np.int64), inputs["values"] * inputs["x"][inputs["col_idx"]]


def ratio(y: np.ndarray, ref: np.ndarray) -> float:
    return CASES.worst_ratio(np.asarray(y, dtype=F32), ref)


def generated(distribution: str, sizes: dict[str, int], seed: int = 7) -> dict[str, np.ndarray]:
    """generate_inputs keeps its contract: a valid CSR matrix in the declared
    dtypes and shapes, the constraints, bounded rows, reproducible."""
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(seed))
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(seed))
    dtypes = {"row_ptr": np.int32, "col_idx": np.int32, "values": np.float32, "x": np.float32}
    assert set(inputs) == set(dtypes)
    for name, dtype in dtypes.items():
        assert inputs[name].dtype == dtype and inputs[name].shape == CASES.shape_of(name, sizes), name
        np.testing.assert_array_equal(inputs[name], again[name])
    row_ptr = inputs["row_ptr"]
    assert row_ptr[0] == 0 and row_ptr[-1] == sizes["nnz"] and np.all(np.diff(row_ptr) >= 0)
    assert np.diff(row_ptr).max(initial=0) <= MAX_ROW_LENGTH
    for name in ("values", "x"):
        magnitude = np.abs(inputs[name])
        assert magnitude.min(initial=1.0) >= 0.5 and magnitude.max(initial=1.0) <= 1.5, name  # every entry counts >= 0.25
    for constraint in CH.constraints:
        assert bool(expressions.evaluate(constraint, {**sizes, **inputs})), constraint
    return inputs


# ---------------------------------------------------------------------------
# the oracle, the generators, the metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_a_loop_over_entries(distribution: str) -> None:
    sizes = {"rows": 203, "cols": 37, "nnz": 3001}
    inputs = generated(distribution, sizes)
    y = [0.0] * sizes["rows"]
    row_ptr, cols, vals, x = (inputs[k].tolist() for k in ("row_ptr", "col_idx", "values", "x"))
    for r in range(sizes["rows"]):
        for k in range(row_ptr[r], row_ptr[r + 1]):
            y[r] += vals[k] * x[cols[k]]
    out = REF.reference(inputs, sizes)["y"]
    assert out.dtype == np.float64 and out.shape == (203,)
    np.testing.assert_allclose(out, y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize(
    "sizes",
    [
        {"rows": 1, "cols": 1, "nnz": 0},
        {"rows": 1, "cols": 1, "nnz": 1},
        {"rows": 3, "cols": 2, "nnz": 5},
        {"rows": 1000, "cols": 7, "nnz": 20},
        {"rows": 777, "cols": 4099, "nnz": 50001},
    ],
)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    generated(distribution, sizes)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"rows": 4, "cols": 4, "nnz": 4}, np.random.default_rng(0))


def test_power_law_rows_at_the_official_size_are_as_the_spec_says() -> None:
    sizes = PERFORMANCE["sizes"]
    lengths = REF.row_lengths("power_law", sizes["rows"], sizes["nnz"], np.random.default_rng(0))
    assert lengths.sum() == sizes["nnz"]
    assert (lengths == 0).sum() == sizes["rows"] // 2  # half the rows empty
    assert (lengths >= 100_000).sum() == 6 and lengths.max() == 650_925  # the load-imbalance rows
    assert lengths[lengths > 0].min() >= 15 and np.median(lengths[lengths > 0]) < 40


def test_distributions_match_their_descriptions() -> None:
    sizes = {"rows": 2000, "cols": 3000, "nnz": 64000}
    lengths = {name: np.diff(generated(name, sizes)["row_ptr"]) for name in CFG["distributions"]}
    assert lengths["uniform"].min() == lengths["uniform"].max() == 32
    assert np.array_equal(lengths["banded"], lengths["uniform"])
    assert (lengths["one_row"] > 0).sum() == 1
    banded = generated("banded", sizes)
    first = banded["col_idx"][banded["row_ptr"][1000] : banded["row_ptr"][1001]]
    assert np.array_equal(first, np.arange(1500 - 16, 1500 + 16))  # centred on the diagonal, contiguous
    power = generated("power_law", sizes)
    columns = power["col_idx"][power["row_ptr"][np.argmax(lengths["power_law"])] :][:64]
    assert np.all(columns[::8] % 8 == 0) and np.all(np.diff(columns.reshape(8, 8), axis=1) == 1)  # aligned runs of 8
    assert len(np.unique(generated("uniform", sizes)["col_idx"])) > 2900  # scattered over every column


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["row_ptr", "col_idx", "values", "x", "y", "rows", "cols", "nnz"]
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= {s["rows"] for s in sizes}
    assert any(s["nnz"] == 0 for s in sizes)  # every row empty
    assert any(s["cols"] == 1 for s in sizes) and any(s["cols"] < REF.RUN for s in sizes)
    assert any(s["nnz"] < s["rows"] / 10 for s in sizes)  # long runs of empty rows
    assert any(s["rows"] % 32 and s["rows"] > 1024 for s in sizes)
    longest = {"rows": 1, "cols": PERFORMANCE["sizes"]["cols"], "nnz": 650_925}
    assert any(s == longest for s in sizes)  # the official matrix's longest row, on its own
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert FUNCTIONAL[0]["sizes"]["nnz"] > 65536  # the repeated call spans many blocks


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    assert sizes == {"rows": 2**20, "cols": 2**20, "nnz": 2**25}
    assert CH.cost_of("bytes", sizes) == 4 * (2**20 + 1) + 8 * 2**25 + 4 * 2**20 + 4 * 2**20  # 281 MB
    assert CH.cost_of("bytes", sizes) > 5 * 50e6  # five times the L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways (spec.md, "Tolerance")


@pytest.mark.parametrize("case", FUNCTIONAL, ids=[c["name"] for c in FUNCTIONAL])
def test_correct_orders_pass_with_margin_and_wrong_ones_fail(case: dict[str, Any]) -> None:
    inputs, ref = CASES.case_inputs(case), CASES.case_reference(case)
    row_ptr, terms = products(inputs)
    for name, order in CORRECT_ORDERS.items():
        assert ratio(order(row_ptr, terms), ref) <= 0.25, name  # a margin of 4 or more
    if case["sizes"]["nnz"] > 0:
        assert ratio(WRONG_ORDERS["dropped_last_entry"](row_ptr, terms), ref) >= 4  # every entry counts >= 0.25
    if np.diff(row_ptr).max() >= 4096:
        assert ratio(WRONG_ORDERS["half_accumulators"](row_ptr, terms), ref) > 1


if __name__ == "__main__":  # the measurements of spec.md, on the official matrix
    sizes = PERFORMANCE["sizes"]
    inputs = CASES.case_inputs(PERFORMANCE)
    ref = CASES.case_reference(PERFORMANCE)
    row_ptr, terms = products(inputs)
    lengths = np.diff(row_ptr)
    print(f"official matrix: longest row {lengths.max()}, {(lengths == 0).sum()} empty rows")
    for name, order in {**CORRECT_ORDERS, **WRONG_ORDERS}.items():
        err = np.abs(order(row_ptr, terms).astype(np.float64) - ref)
        worst = int(np.argmax(err))
        print(f"  {name:20s} max |err| {err.max():.4g} (row of {lengths[worst]} entries, |y| {abs(ref[worst]):.4g}),"
              f" ratio {ratio(order(row_ptr, terms), ref):.4g}; min |err| over nonempty rows {err[lengths > 0].min():.3g}")
