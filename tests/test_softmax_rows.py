"""softmax_rows: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The float32
emulations stand in for GPU solutions: the sum of exponentials in the orders
solutions use (one thread walking the row, pairwise, per-thread partials then
across threads), with a correctly rounded or a fast, biased exp.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("softmax_rows")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio

# ---------------------------------------------------------------------------
# float32 emulations

ExpFn = Callable[[np.ndarray], np.ndarray]
LOG2E = F32(1.4426950408889634)


def exp_rounded(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(z.astype(np.float64)).astype(F32)


def exp_fast_biased(z: np.ndarray) -> np.ndarray:
    """__expf-like: 2^(float32(z*log2 e)), then -1..+2 ulp by a hash (mean bias +0.5 ulp)."""
    w = (z * LOG2E).astype(F32)
    with np.errstate(over="ignore"):
        r = np.exp2(w.astype(np.float64)).astype(F32)
    bits = r.view(np.uint32)
    k = ((bits * np.uint32(2654435761)) >> np.uint32(30)).astype(np.int32)
    return np.where(r >= np.finfo(F32).tiny, (bits.view(np.int32) + k - 1).view(F32), F32(0))


def row_sum(e: np.ndarray, order: str) -> np.ndarray:
    if order == "sequential":  # one thread walks the row
        return np.cumsum(e, axis=1, dtype=F32)[:, -1:]
    if order == "pairwise":  # a tree, as shuffle and shared-memory reductions are
        return e.sum(axis=1, keepdims=True, dtype=F32)
    if order == "strided_partials":  # 256 threads each walk a stride-256 slice, then one adds the partials
        rows, cols = e.shape
        padded = np.concatenate([e, np.zeros((rows, -cols % 256), F32)], axis=1).reshape(rows, -1, 256)
        partial = np.cumsum(padded, axis=1, dtype=F32)[:, -1, :]
        return np.cumsum(partial, axis=1, dtype=F32)[:, -1:]
    raise ValueError(order)


def softmax_float32(x: np.ndarray, expf: ExpFn, order: str, shift: bool = True, out_dtype: type = F32) -> np.ndarray:
    m = x.max(axis=1, keepdims=True) if shift else np.zeros((x.shape[0], 1), F32)
    e = expf((x - m).astype(F32))
    with np.errstate(all="ignore"):  # the unshifted variant overflows on purpose
        y = (e * (F32(1) / row_sum(e, order))).astype(F32)
    return y.astype(out_dtype).astype(F32)


def half_exp(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(z.astype(np.float16)).astype(F32)


# ---------------------------------------------------------------------------
# the oracle


def slow_loop(x: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the vectorised reference."""
    out = np.zeros(x.shape)
    for r, row in enumerate(x.astype(np.float64).tolist()):
        m = max(row)
        e = [math.exp(v - m) for v in row]
        s = math.fsum(e)
        out[r] = [v / s for v in e]
    return out


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 2), (4, 37), (2, 300)])
def test_reference_matches_scalar_loop(distribution: str, rows: int, cols: int) -> None:
    sizes = dict(rows=rows, cols=cols)
    x = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))["input"]
    np.testing.assert_allclose(REF.reference({"input": x}, sizes)["output"], slow_loop(x), rtol=1e-12, atol=1e-300)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(rows=1, cols=1), dict(rows=7, cols=33), dict(rows=2, cols=262144)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_distributions_are_what_they_claim() -> None:
    sizes = dict(rows=64, cols=500)
    rng = np.random.default_rng(0)
    large = REF.generate_inputs("large_logits", sizes, rng)["input"]
    assert (large.max(axis=1) > 88.8).any() and (large.max(axis=1) < -103.0).any()  # exp overflows / underflows
    equal = REF.generate_inputs("all_equal", sizes, rng)["input"]
    assert (equal == equal[:, :1]).all() and np.abs(equal).max() > 100
    y = REF.reference(REF.generate_inputs("one_dominant", sizes, rng), sizes)["output"]
    assert (y.max(axis=1) > 0.9).all()


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(rows=1, cols=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "output", "rows", "cols"]
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    for k in ("rows", "cols"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert {1, 2, 3} <= {s["cols"] for s in sizes}
    assert any(s["cols"] % 32 and s["cols"] > 1024 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    assert CH.cost_of("bytes", sizes) == 268_435_456  # 134 MB in, 134 MB out: past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

HARD = [c for c in FUNCTIONAL if c["sizes"]["cols"] >= 4096] + [PERFORMANCE]
ORDERS = ("sequential", "pairwise", "strided_partials")
OFFICIAL_ROWS = 256  # of the official case's 4096 rows: the same width, a sixteenth of the memory


def inputs_and_reference(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    x = case_inputs(case)["input"]
    if case is PERFORMANCE:
        x = np.ascontiguousarray(x[:OFFICIAL_ROWS])
        return x, REF.reference({"input": x}, dict(rows=OFFICIAL_ROWS, cols=x.shape[1]))["output"]
    return x, case_reference(case)


@pytest.mark.parametrize("case", HARD, ids=[c["name"] for c in HARD])
def test_float32_softmax_passes_with_margin_in_every_order(case: dict[str, Any]) -> None:
    x, ref = inputs_and_reference(case)
    for order in ORDERS:
        # One thread adding a 262144-wide row after its dominant element loses
        # the small terms (stagnation, ~5e-4 of the sum): the worst correct case.
        limit = 0.75 if order == "sequential" else 0.1
        for expf in (exp_rounded, exp_fast_biased):
            assert worst_ratio(softmax_float32(x, expf, order), ref) <= limit, (order, expf.__name__)


def test_every_functional_test_passes_the_pairwise_float32_softmax() -> None:
    for case in FUNCTIONAL:
        out = softmax_float32(case_inputs(case)["input"], exp_fast_biased, "pairwise")
        assert worst_ratio(out, case_reference(case)) <= 0.1, case["name"]


def bfloat16(y: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even), back in float32."""
    bits = y.astype(F32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(F32)


@pytest.mark.parametrize("name", ["widest", "official"])
def test_wrong_softmaxes_fail(name: str) -> None:
    case = next(c for c in [*FUNCTIONAL, PERFORMANCE] if c["name"] == name)
    x, ref = inputs_and_reference(case)
    assert worst_ratio(softmax_float32(x, exp_rounded, "pairwise", shift=False), ref) == math.inf
    assert worst_ratio(bfloat16(softmax_float32(x, exp_rounded, "pairwise")), ref) >= 1.5
    assert worst_ratio(softmax_float32(x, half_exp, "pairwise"), ref) >= 2.0
