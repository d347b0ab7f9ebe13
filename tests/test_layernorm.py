"""layernorm: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The float32
emulations stand in for GPU solutions: two-pass statistics (the mean, then
the squared deviations from it) with sums in the orders solutions use (one
thread walking the row, pairwise, 32 or 256 strided per-thread partials then
a tree across threads), and the wrong one-pass variance E[x^2] - E[x]^2 in
the same orders.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("layernorm")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio

# ---------------------------------------------------------------------------
# float32 emulations

ORDERS = ("sequential", "pairwise", "lanes_32", "lanes_256")


def row_sum(q: np.ndarray, order: str) -> np.ndarray:
    if order == "sequential":  # one thread walks the row
        return np.cumsum(q, axis=1, dtype=F32)[:, -1:]
    if order == "pairwise":
        return q.sum(axis=1, keepdims=True, dtype=F32)
    # lanes_L: L threads each walk a stride-L slice, then a tree across the threads (shuffles, shared memory)
    lanes = int(order.removeprefix("lanes_"))
    rows, cols = q.shape
    padded = np.concatenate([q, np.zeros((rows, -cols % lanes), F32)], axis=1).reshape(rows, -1, lanes)
    partial = np.cumsum(padded, axis=1, dtype=F32)[:, -1, :]
    while partial.shape[1] > 1:
        half = partial.shape[1] // 2
        partial = (partial[:, :half] + partial[:, half:]).astype(F32)
    return partial


def layernorm_float32(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, order: str, one_pass: bool = False,
                      unbiased: bool = False, eps_outside_sqrt: bool = False) -> np.ndarray:
    n = F32(x.shape[1])
    with np.errstate(all="ignore"):  # the wrong variants divide by zero or take roots of negatives on purpose
        mean = (row_sum(x, order) / n).astype(F32)
        d = (x - mean).astype(F32)
        if one_pass:
            var = (row_sum(np.square(x), order) / n - np.square(mean)).astype(F32)
        else:
            var = (row_sum(np.square(d), order) / (n - F32(1) if unbiased else n)).astype(F32)
        if eps_outside_sqrt:
            inv_std = (F32(1) / (np.sqrt(var) + F32(REF.EPS))).astype(F32)
        else:
            inv_std = (F32(1) / np.sqrt((var + F32(REF.EPS)).astype(F32))).astype(F32)
        return ((d * inv_std).astype(F32) * gamma + beta).astype(F32)


# ---------------------------------------------------------------------------
# the oracle


def slow_loop(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the vectorised reference."""
    out = np.zeros(x.shape)
    g, b = gamma.astype(np.float64).tolist(), beta.astype(np.float64).tolist()
    for r, row in enumerate(x.astype(np.float64).tolist()):
        mean = math.fsum(row) / len(row)
        var = math.fsum((v - mean) ** 2 for v in row) / len(row)
        out[r] = [(v - mean) / math.sqrt(var + 1e-5) * gc + bc for v, gc, bc in zip(row, g, b)]
    return out


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 2), (9, 37), (2, 300)])
def test_reference_matches_scalar_loop(distribution: str, rows: int, cols: int) -> None:
    sizes = dict(rows=rows, cols=cols)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    expected = slow_loop(inputs["input"], inputs["gamma"], inputs["beta"])
    np.testing.assert_allclose(REF.reference(inputs, sizes)["output"], expected, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(rows=1, cols=1), dict(rows=7, cols=33), dict(rows=2, cols=65536)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_distributions_are_what_they_claim() -> None:
    sizes = dict(rows=64, cols=4096)
    rng = np.random.default_rng(0)
    large = REF.generate_inputs("large_mean", sizes, rng)["input"].astype(np.float64)
    distance = np.abs(large.mean(axis=1)) / large.std(axis=1)
    assert distance.min() > 90 and distance.max() < 350  # 100 to 316 standard deviations from zero
    flat = REF.generate_inputs("flat_rows", sizes, rng)["input"].astype(np.float64)
    assert (flat[::2] == flat[::2, :1]).all()  # even rows constant
    assert (flat[1::2].var(axis=1) < REF.EPS / 5).all() and (flat[1::2].var(axis=1) > 0).all()


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(rows=1, cols=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "gamma", "beta", "output", "rows", "cols"]
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    for k in ("rows", "cols"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert {1, 2, 3} <= {s["cols"] for s in sizes}
    assert any(s["cols"] % 4 and s["cols"] > 8192 for s in sizes)  # wide and not 16-byte aligned
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert PERFORMANCE["sizes"] == dict(rows=8192, cols=4096)


def test_cost_model_at_the_official_size() -> None:
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 268_468_224  # 134 MB in, 134 MB out: past the 50 MB L2


def test_single_column_rows_give_beta() -> None:
    case = next(c for c in FUNCTIONAL if c["name"] == "single_column")
    np.testing.assert_array_equal(case_reference(case), np.broadcast_to(case_inputs(case)["beta"], (7, 1)))


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

OFFICIAL_ROWS = 1024  # of the official case's 8192 rows: the same width, an eighth of the memory
HARD = [c for c in FUNCTIONAL if c["sizes"]["cols"] >= 1000] + [PERFORMANCE]
GPU_ORDERS = ("pairwise", "lanes_32", "lanes_256")


def inputs_and_reference(case: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    inputs = case_inputs(case)
    if case is PERFORMANCE:
        inputs["input"] = np.ascontiguousarray(inputs["input"][:OFFICIAL_ROWS])
        return inputs, REF.reference(inputs, dict(rows=OFFICIAL_ROWS, cols=inputs["input"].shape[1]))["output"]
    return inputs, case_reference(case)


def run(inputs: dict[str, np.ndarray], order: str, **wrong: bool) -> np.ndarray:
    return layernorm_float32(inputs["input"], inputs["gamma"], inputs["beta"], order, **wrong)


@pytest.mark.parametrize("case", HARD, ids=[c["name"] for c in HARD])
def test_two_pass_float32_passes_with_margin_in_every_order(case: dict[str, Any]) -> None:
    inputs, ref = inputs_and_reference(case)
    # One thread walking a 4096-wide large_mean row loses the most in its mean: the worst correct case.
    assert worst_ratio(run(inputs, "sequential"), ref) <= 0.7
    for order in GPU_ORDERS:
        assert worst_ratio(run(inputs, order), ref) <= 0.2, order


def test_every_functional_test_passes_every_two_pass_order() -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        for order in ORDERS:
            assert worst_ratio(run(inputs, order), case_reference(case)) <= 0.7, (case["name"], order)


LARGE_MEAN = [c for c in [*FUNCTIONAL, PERFORMANCE] if c["distribution"] == "large_mean"]


def test_one_pass_variance_fails_in_every_order() -> None:
    # The cancellation grows with the square of the distance from zero: the
    # narrow rows and the official rows, where some row sits ~300 standard
    # deviations out, are where it shows whatever the summation order.
    worst = {order: 0.0 for order in ORDERS}
    for case in LARGE_MEAN:
        inputs, ref = inputs_and_reference(case)
        for order in ORDERS:
            ratio = worst_ratio(run(inputs, order, one_pass=True), ref)
            worst[order] = max(worst[order], ratio)
            if case is PERFORMANCE:
                assert ratio >= 3.0, order
    assert min(worst.values()) >= 10.0, worst


def test_unbiased_variance_and_misplaced_eps_fail() -> None:
    single = next(c for c in FUNCTIONAL if c["name"] == "single_column")
    assert worst_ratio(run(case_inputs(single), "pairwise", unbiased=True), case_reference(single)) == math.inf
    narrow = next(c for c in FUNCTIONAL if c["name"] == "cols_33")
    assert worst_ratio(run(case_inputs(narrow), "pairwise", unbiased=True), case_reference(narrow)) >= 3.0
    for name in ("cols_33_flat", "official_width_flat", "widest_odd_flat"):
        flat = next(c for c in FUNCTIONAL if c["name"] == name)
        assert worst_ratio(run(case_inputs(flat), "pairwise", eps_outside_sqrt=True), case_reference(flat)) >= 10.0
