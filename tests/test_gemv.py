"""gemv: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The float32
emulations stand in for GPU solutions: the dot products of all rows at once,
in the orders GPU kernels add them (one thread walking the row, lanes of a
warp or a block each walking a strided share then a tree, column chunks
added into y by atomics in a random order, NumPy's BLAS), and the wrong
ones (TF32 or half-precision inputs, the last column dropped).

`python tests/test_gemv.py` prints the table of spec.md, "Tolerance".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("gemv")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio
OFFICIAL_ROWS = 512  # of the official case's 8192 rows: the same row length, 1/16 of the work

# ---------------------------------------------------------------------------
# float32 emulations: (A, x) -> y for every row at once

Gemv = Callable[[np.ndarray, np.ndarray], np.ndarray]


def fma(acc: np.ndarray, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """float32 fused multiply-add: the float64 product of two float32 values is
    exact, so only the final rounding to float32 remains."""
    return (acc.astype(np.float64) + a.astype(np.float64) * x.astype(np.float64)).astype(F32)


def sequential(a: np.ndarray, x: np.ndarray, fused: bool = True) -> np.ndarray:
    """One thread per row walks it in order (naive.cu): fmaf, or a rounded product then an add."""
    acc = np.zeros(a.shape[0], F32)
    for j in range(a.shape[1]):
        acc = fma(acc, a[:, j], x[j]) if fused else (acc + (a[:, j] * x[j]).astype(F32)).astype(F32)
    return acc


def lanes_then_tree(a: np.ndarray, x: np.ndarray, lanes: int, vec: int) -> np.ndarray:
    """`lanes` threads share a row: thread l takes the vec-wide units l, l + lanes,
    ... in order (fmaf), then the lanes' sums are added pairwise (a shuffle or
    shared-memory tree)."""
    m, n = a.shape
    pad = -n % (lanes * vec)
    a4 = np.concatenate([a, np.zeros((m, pad), F32)], axis=1).reshape(m, -1, lanes, vec)
    x4 = np.concatenate([x, np.zeros(pad, F32)]).reshape(-1, lanes, vec)
    acc = np.zeros((m, lanes), F32)
    for step in range(a4.shape[1]):
        for v in range(vec):
            acc = fma(acc, a4[:, step, :, v], x4[step, :, v])
    while acc.shape[1] > 1:
        half = acc.shape[1] // 2
        acc = (acc[:, :half] + acc[:, half:]).astype(F32)
    return acc[:, 0]


def chunks_atomics(a: np.ndarray, x: np.ndarray, chunk: int = 512) -> np.ndarray:
    """Column chunks reduced by a warp each (float4 lanes), the partials added
    into a zeroed y in a random order (atomicAdd)."""
    n = a.shape[1]
    partials = [lanes_then_tree(a[:, s : s + chunk], x[s : s + chunk], 32, 4) for s in range(0, n, chunk)]
    y = np.zeros(a.shape[0], F32)
    for k in np.random.default_rng(n).permutation(len(partials)):
        y = (y + partials[k]).astype(F32)
    return y


def tf32(v: np.ndarray) -> np.ndarray:
    """Round float32 to TF32 (10 mantissa bits, nearest even), back in float32."""
    bits = v.astype(F32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
    return rounded.astype(np.uint32).view(F32)


def half(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return v.astype(np.float16).astype(F32)


CORRECT: dict[str, Gemv] = {
    "sequential_fma": sequential,
    "sequential_mul_add": lambda a, x: sequential(a, x, fused=False),
    "warp_float4_lanes": lambda a, x: lanes_then_tree(a, x, 32, 4),
    "block_256_lanes": lambda a, x: lanes_then_tree(a, x, 256, 1),
    "chunks_atomics": chunks_atomics,
    "numpy_blas": lambda a, x: a @ x,
}
WRONG: dict[str, Gemv] = {
    "tf32_inputs": lambda a, x: lanes_then_tree(tf32(a), tf32(x), 32, 4),
    "half_A": lambda a, x: lanes_then_tree(half(a), x, 32, 4),
    "last_column_dropped": lambda a, x: lanes_then_tree(a[:, :-1], x[:-1], 32, 4),
}

# ---------------------------------------------------------------------------
# the oracle


def slow_loop(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the vectorised reference."""
    xs = x.astype(np.float64).tolist()
    return np.array([math.fsum(v * w for v, w in zip(row, xs)) for row in a.astype(np.float64).tolist()])


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("m, n", [(1, 1), (3, 2), (4, 37), (2, 1001)])
def test_reference_matches_scalar_loop(distribution: str, m: int, n: int) -> None:
    sizes = dict(M=m, N=n)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    expected = slow_loop(inputs["A"], inputs["x"])
    np.testing.assert_allclose(REF.reference(inputs, sizes)["y"], expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(M=1, N=1), dict(M=7, N=33), dict(M=2, N=32768)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_large_cancel_is_what_it_claims() -> None:
    sizes = dict(M=64, N=4097)
    inputs = REF.generate_inputs("large_cancel", sizes, np.random.default_rng(0))
    a, x = inputs["A"].astype(np.float64), inputs["x"].astype(np.float64)
    assert x.sum() == 0.0  # the rows' common part cancels exactly
    assert np.abs(a).min() > 65504  # past half precision's largest value
    terms = np.abs(a * x).sum(axis=1)
    y = np.abs(REF.reference(inputs, sizes)["y"])
    assert 0.5 * sizes["N"] < terms.mean() < 1.5 * sizes["N"]  # products of order 1
    assert np.median(y) < 1e-4 * terms.mean()  # y is what is left of them


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(M=1, N=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["A", "x", "y", "M", "N"]
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= {s["N"] for s in sizes}
    assert any(s["N"] == PARAMS["N"]["max"] and s["M"] == 1 for s in sizes)  # one longest row
    assert any(s["N"] % 4 and s["N"] > 1024 for s in sizes)  # rows not 16-byte aligned
    assert any(s["M"] > 2**14 for s in sizes)  # many rows
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    assert CH.cost_of("bytes", sizes) == 268_500_992  # A is 268 MB: past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

LONG_ROWS = [c for c in FUNCTIONAL if c["sizes"]["N"] >= 4096]
MARGIN = 2.5  # every correct order stays below 1/MARGIN of the tolerance


def inputs_and_reference(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    inputs = case_inputs(case)
    a, x = inputs["A"], inputs["x"]
    if case is PERFORMANCE:
        a = np.ascontiguousarray(a[:OFFICIAL_ROWS])
        return a, x, REF.reference({"A": a, "x": x}, dict(M=OFFICIAL_ROWS, N=x.size))["y"]
    return a, x, case_reference(case)


@pytest.mark.parametrize("case", [*LONG_ROWS, PERFORMANCE], ids=[c["name"] for c in [*LONG_ROWS, PERFORMANCE]])
def test_float32_in_every_order_passes_with_margin(case: dict[str, Any]) -> None:
    a, x, ref = inputs_and_reference(case)
    for order, gemv in CORRECT.items():
        assert worst_ratio(gemv(a, x), ref) <= 1 / MARGIN, order


def test_every_functional_test_passes_the_sequential_float32_sum() -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        assert worst_ratio(sequential(inputs["A"], inputs["x"]), case_reference(case)) <= 1 / MARGIN, case["name"]


@pytest.mark.parametrize("name", ["official", "official_width", "longest_rows_cancel"])
def test_wrong_gemvs_fail(name: str) -> None:
    case = next(c for c in [*FUNCTIONAL, PERFORMANCE] if c["name"] == name)
    a, x, ref = inputs_and_reference(case)
    for order, gemv in WRONG.items():
        with np.errstate(invalid="ignore", over="ignore"):
            assert worst_ratio(gemv(a, x), ref) >= 2.0, order


if __name__ == "__main__":  # the table of spec.md
    rows = [*LONG_ROWS, PERFORMANCE]
    print("order".ljust(22) + "".join(c["name"][:20].rjust(22) for c in rows))
    data = [inputs_and_reference(c) for c in rows]
    for order, gemv in {**CORRECT, **WRONG}.items():
        cells = []
        for a, x, ref in data:
            with np.errstate(invalid="ignore", over="ignore"):
                out = gemv(a, x)
                err = np.abs(out.astype(np.float64) - ref).max()
            cells.append(f"{err:9.2e} {worst_ratio(out, ref):8.3g}  ")
        print(order.ljust(22) + "".join(cells))
