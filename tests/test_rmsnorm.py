"""rmsnorm: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The NumPy
emulations stand in for GPU solutions: the float32 sum of squares in the
orders solutions use (one thread walking the row, pairwise, per-thread
partials then across threads), the output rounded to float16 once (x * inv_rms
* weight in float32) or twice (PyTorch's and Hugging Face's order: the
normalised value rounded to float16, then a float16 multiply by the weight).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F16, F32 = np.float16, np.float32
CASES = ChallengeCases("rmsnorm")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio

# ---------------------------------------------------------------------------
# float32 emulations


def sum_of_squares(x: np.ndarray, order: str) -> np.ndarray:
    if order == "half":  # the wrong one: hfma into a float16 accumulator
        with np.errstate(over="ignore"):
            return np.cumsum(x.astype(F16) * x.astype(F16), axis=1, dtype=F16)[:, -1:].astype(F32)
    q = np.square(x.astype(F32))
    if order == "sequential":  # one thread walks the row
        return np.cumsum(q, axis=1, dtype=F32)[:, -1:]
    if order == "pairwise":  # a tree, as shuffle and shared-memory reductions are
        return q.sum(axis=1, keepdims=True, dtype=F32)
    if order == "strided_partials":  # 256 threads each walk a stride-256 slice, then one adds the partials
        rows, cols = q.shape
        padded = np.concatenate([q, np.zeros((rows, -cols % 256), F32)], axis=1).reshape(rows, -1, 256)
        partial = np.cumsum(padded, axis=1, dtype=F32)[:, -1, :]
        return np.cumsum(partial, axis=1, dtype=F32)[:, -1:]
    raise ValueError(order)


def rmsnorm_float32(x: np.ndarray, w: np.ndarray, order: str, round_twice: bool = False,
                    eps: float = REF.EPS, eps_outside_sqrt: bool = False) -> np.ndarray:
    with np.errstate(all="ignore"):  # the wrong variants divide by zero on purpose
        ms = (sum_of_squares(x, order) / F32(x.shape[1])).astype(F32)
        if eps_outside_sqrt:
            inv_rms = (F32(1) / (np.sqrt(ms) + F32(eps))).astype(F32)
        else:
            inv_rms = (F32(1) / np.sqrt((ms + F32(eps)).astype(F32))).astype(F32)
        normalised = (x.astype(F32) * inv_rms).astype(F32)
        if round_twice:
            return (normalised.astype(F16) * w.astype(F16)).astype(F16)
        return (normalised * w.astype(F32)).astype(F16)


# ---------------------------------------------------------------------------
# the oracle


def slow_loop(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the vectorised reference."""
    out = np.zeros(x.shape)
    weight = w.astype(np.float64).tolist()
    for r, row in enumerate(x.astype(np.float64).tolist()):
        inv_rms = 1.0 / math.sqrt(math.fsum(v * v for v in row) / len(row) + 1e-6)
        out[r] = [v * inv_rms * g for v, g in zip(row, weight)]
    return out


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 2), (9, 37), (2, 300)])
def test_reference_matches_scalar_loop(distribution: str, rows: int, cols: int) -> None:
    sizes = dict(rows=rows, cols=cols)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    expected = slow_loop(inputs["input"], inputs["weight"])
    np.testing.assert_allclose(REF.reference(inputs, sizes)["output"], expected, rtol=1e-12, atol=1e-300)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(rows=1, cols=1), dict(rows=9, cols=33), dict(rows=2, cols=65536)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    assert set(inputs) == {"input", "weight"}
    assert inputs["input"].shape == (sizes["rows"], sizes["cols"]) and inputs["weight"].shape == (sizes["cols"],)
    for value in inputs.values():
        assert value.dtype == F16 and value.flags.c_contiguous and np.isfinite(value).all()
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    for name in inputs:
        np.testing.assert_array_equal(inputs[name], again[name])


def test_distributions_are_what_they_claim() -> None:
    sizes = dict(rows=64, cols=4096)
    rng = np.random.default_rng(0)
    large = REF.generate_inputs("large_magnitude", sizes, rng)["input"].astype(np.float64)
    assert ((large * large).sum(axis=1) > np.finfo(F16).max).all()  # every row's sum of squares overflows float16
    tiny_inputs = REF.generate_inputs("tiny_and_zero_rows", sizes, rng)
    tiny = tiny_inputs["input"].astype(np.float64)
    assert (tiny[::REF.ZERO_ROW_EVERY] == 0).all() and (np.abs(tiny).max(axis=1)[1:REF.ZERO_ROW_EVERY] > 0).all()
    ms = (tiny * tiny).mean(axis=1)[1:REF.ZERO_ROW_EVERY]
    assert ms.min() < REF.EPS < ms.max()  # eps changes the result
    y = REF.reference(tiny_inputs, sizes)["output"]
    assert (y[::REF.ZERO_ROW_EVERY] == 0).all()


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(rows=1, cols=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "weight", "output", "rows", "cols"]
    assert [p["dtype"] for p in CFG["params"][:3]] == ["float16"] * 3
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    for k in ("rows", "cols"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert {1, 2, 3} <= {s["cols"] for s in sizes}
    assert any(s["cols"] % 8 and s["cols"] > 8192 for s in sizes)  # wide and not 16-byte aligned
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert PERFORMANCE["sizes"] == dict(rows=16384, cols=4096)


def test_cost_model_at_the_official_size() -> None:
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 268_443_648  # 134 MB in, 134 MB out: past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

OFFICIAL_ROWS = 1024  # of the official case's 16384 rows: the same width, a sixteenth of the memory
HARD = [c for c in FUNCTIONAL if c["sizes"]["cols"] >= 4096] + [PERFORMANCE]
ORDERS = ("sequential", "pairwise", "strided_partials")


def inputs_and_reference(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    inputs = case_inputs(case)
    if case is PERFORMANCE:
        inputs["input"] = np.ascontiguousarray(inputs["input"][:OFFICIAL_ROWS])
        sizes = dict(rows=OFFICIAL_ROWS, cols=inputs["input"].shape[1])
        return inputs["input"], inputs["weight"], REF.reference(inputs, sizes)["output"]
    return inputs["input"], inputs["weight"], case_reference(case)


@pytest.mark.parametrize("case", HARD, ids=[c["name"] for c in HARD])
def test_float32_rmsnorm_passes_with_margin_in_every_order(case: dict[str, Any]) -> None:
    x, w, ref = inputs_and_reference(case)
    for order in ORDERS:
        # One rounding to float16 costs up to 2^-11 of |y| (ratio 0.25), two up to twice that.
        assert worst_ratio(rmsnorm_float32(x, w, order), ref) <= 0.3, order
        assert worst_ratio(rmsnorm_float32(x, w, order, round_twice=True), ref) <= 0.5, order


def test_every_functional_test_passes_the_pairwise_float32_rmsnorm() -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        out = rmsnorm_float32(inputs["input"], inputs["weight"], "pairwise", round_twice=True)
        assert worst_ratio(out, case_reference(case)) <= 0.5, case["name"]


@pytest.mark.parametrize("name", ["official_width", "official_width_tiny", "widest", "widest_odd_nonzero"])
def test_half_statistics_fail(name: str) -> None:
    x, w, ref = inputs_and_reference(next(c for c in FUNCTIONAL if c["name"] == name))
    assert worst_ratio(rmsnorm_float32(x, w, "half"), ref) >= 3.0


@pytest.mark.parametrize("name", ["official_width_tiny", "cols_1000", "widest_odd"])
def test_misplaced_or_missing_eps_fails(name: str) -> None:
    x, w, ref = inputs_and_reference(next(c for c in FUNCTIONAL if c["name"] == name))
    assert worst_ratio(rmsnorm_float32(x, w, "pairwise", eps=0.0), ref) == math.inf  # zero rows: 0 * inf
    assert worst_ratio(rmsnorm_float32(x, w, "pairwise", eps_outside_sqrt=True), ref) >= 10.0
    assert worst_ratio(rmsnorm_float32(x, w, "pairwise", eps=1e-5), ref) >= 10.0
