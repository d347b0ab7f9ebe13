"""sgemm_fp32: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The float32 emulations stand in for GPU solutions: a dot product
accumulated in order (with and without FMA), split-k partials added at the
end (as atomics would), NumPy's blocked BLAS; and TF32, the product the
tolerance must reject (inputs rounded to 10 mantissa bits, float32
accumulation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("sgemm_fp32")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio


def tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 to TF32 (10 mantissa bits), nearest even."""
    bits = x.astype(F32).view(np.uint32).astype(np.uint64)
    return ((bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000).astype(np.uint32).view(F32)


def in_order(A: np.ndarray, B: np.ndarray, fma: bool = True) -> np.ndarray:
    """C accumulated over k in order in float32; with fma the product is not rounded first."""
    C = np.zeros((A.shape[0], B.shape[1]), F32)
    for k in range(A.shape[1]):
        p = np.outer(A[:, k].astype(np.float64), B[k, :].astype(np.float64))
        C = (C + p).astype(F32) if fma else (C + p.astype(F32)).astype(F32)
    return C


def split_k(A: np.ndarray, B: np.ndarray, parts: int) -> np.ndarray:
    step = -(-A.shape[1] // parts)
    C = np.zeros((A.shape[0], B.shape[1]), F32)
    for p in range(parts):
        C = (C + in_order(A[:, p * step : (p + 1) * step], B[p * step : (p + 1) * step])).astype(F32)
    return C


@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (2, 3, 5), (7, 4, 1), (5, 9, 13)])
def test_reference_matches_scalar_loop(M: int, N: int, K: int) -> None:
    sizes = dict(M=M, N=N, K=K)
    inputs = REF.generate_inputs("normal", sizes, np.random.default_rng(2))
    A, B = inputs["A"].astype(np.float64).tolist(), inputs["B"].astype(np.float64).tolist()
    expected = np.array([[sum(A[m][k] * B[k][n] for k in range(K)) for n in range(N)] for m in range(M)])
    np.testing.assert_allclose(REF.reference(inputs, sizes)["C"], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(M=1, N=1, K=1), dict(M=3, N=70, K=9), dict(M=8192, N=2, K=3)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(M=1, N=1, K=1), np.random.default_rng(0))


def test_metadata_covers_the_shapes_that_break_gemms() -> None:
    assert [p["name"] for p in CFG["params"]] == ["A", "B", "C", "M", "N", "K"]
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert dict(M=1, N=1, K=1) in sizes
    assert any(s["K"] == 1 and s["M"] > 1 for s in sizes)
    assert any(all(s[k] % 16 for k in ("M", "N", "K")) for s in sizes)
    for k in ("M", "N", "K"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    # emu runs every CUDA solution on these: keep them small
    assert max(s["M"] * s["N"] * s["K"] for s in sizes) <= 1_600_000
    assert CH.cost_of("flops", PERFORMANCE["sizes"]) == 2 * 4096**3


# ---------------------------------------------------------------------------
# the tolerance policy, both ways


def official_block(rows: int = 64, cols: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A corner of the official case (full K = 4096) and its float64 product."""
    inputs = case_inputs(PERFORMANCE)
    A, B = inputs["A"][:rows], inputs["B"][:, :cols]
    return A, B, A.astype(np.float64) @ B.astype(np.float64)


def test_float32_orders_pass_and_tf32_fails_at_the_official_size() -> None:
    A, B, ref = official_block()
    assert worst_ratio(in_order(A, B, fma=False), ref) <= 0.25
    assert worst_ratio(in_order(A, B), ref) <= 0.25
    assert worst_ratio(split_k(A, B, 8), ref) <= 0.25
    assert worst_ratio(A @ B, ref) <= 0.25
    assert worst_ratio(in_order(tf32(A), tf32(B)), ref) >= 5


def test_float32_in_order_passes_every_functional_test_with_margin() -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        out = in_order(inputs["A"], inputs["B"], fma=False)
        assert worst_ratio(out, case_reference(case)) <= 0.35, case["name"]


@pytest.mark.parametrize("name", ["tile_edges", "longest_k", "long_k_uniform"])
def test_tf32_fails_the_tests_where_it_must(name: str) -> None:
    case = next(c for c in FUNCTIONAL if c["name"] == name)
    inputs = case_inputs(case)
    assert worst_ratio(in_order(tf32(inputs["A"]), tf32(inputs["B"])), case_reference(case)) > 1.0
