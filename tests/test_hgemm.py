"""hgemm: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The challenge folder is read directly (challenge.toml with tomllib,
reference.py by path) and test inputs are drawn the way harness.testdata
draws them (generate_inputs with the generator seeded [seed, 0], then the
`zero` inputs cleared). The float32 emulations stand in for GPU solutions: a
float32 accumulation in any order must pass with margin, a float16
accumulator must fail.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1] / "challenges" / "hgemm"
CFG: dict[str, Any] = tomllib.loads((ROOT / "challenge.toml").read_text())
_spec = importlib.util.spec_from_file_location("hgemm_reference", ROOT / "reference.py")
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
ATOL, RTOL = CFG["tolerance"]["atol"], CFG["tolerance"]["rtol"]
SIZES = ("M", "N", "K")
F32 = np.float32


def case_inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    inputs = REF.generate_inputs(case["distribution"], case["sizes"], np.random.default_rng([case["seed"], 0]))
    for name in case.get("zero", []):
        inputs[name][...] = 0
    return inputs


def worst_ratio(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / (atol + rtol*|ref|): <= 1 passes; NaN counts as inf."""
    ratio = np.abs(out.astype(np.float64) - ref) / (ATOL + RTOL * np.abs(ref))
    return float("inf") if np.isnan(ratio).any() else float(ratio.max(initial=0.0))


# ---------------------------------------------------------------------------
# float32 emulations of GPU solutions


def tensor_core_order(A: np.ndarray, B: np.ndarray, acc_dtype: type = F32) -> np.ndarray:
    """mma.sync order: each 16-product step summed exactly, added to an accumulator
    of `acc_dtype` (float16 is the wrong one: f16-accumulating mma)."""
    acc = np.zeros((A.shape[0], B.shape[1]), acc_dtype)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    for k0 in range(0, A.shape[1], 16):
        acc = (acc.astype(np.float64) + A64[:, k0:k0 + 16] @ B64[k0:k0 + 16]).astype(acc_dtype)
    return acc


def sequential_float32(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """One float32 add per product, k in order: the naive kernel's order, the worst."""
    acc = np.zeros((A.shape[0], B.shape[1]), F32)
    A32, B32 = A.astype(F32), B.astype(F32)
    for k in range(A.shape[1]):
        acc += A32[:, k, None] * B32[None, k, :]
    return acc


def split_k_float32(A: np.ndarray, B: np.ndarray, parts: int = 8) -> np.ndarray:
    """float32 partial products over K slices, added at the end (atomics order)."""
    acc = np.zeros((A.shape[0], B.shape[1]), F32)
    for idx in np.array_split(np.arange(A.shape[1]), parts):
        acc += A[:, idx].astype(F32) @ B[idx].astype(F32)
    return acc


# ---------------------------------------------------------------------------
# the oracle


def slow_loop(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    M, K = A.shape
    N = B.shape[1]
    a, b = A.astype(np.float64).tolist(), B.astype(np.float64).tolist()
    return np.array([[sum(a[m][k] * b[k][n] for k in range(K)) for n in range(N)] for m in range(M)]).reshape(M, N)


@pytest.mark.parametrize("distribution", REF.DISTRIBUTIONS)
@pytest.mark.parametrize("sizes", [dict(M=1, N=1, K=1), dict(M=5, N=3, K=7), dict(M=4, N=9, K=16)],
                         ids=lambda s: "x".join(str(s[k]) for k in SIZES))
def test_reference_matches_scalar_loop(distribution: str, sizes: dict[str, int]) -> None:
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(3))
    C = REF.reference(inputs, sizes)["C"]
    assert C.shape == (sizes["M"], sizes["N"])
    np.testing.assert_allclose(C, slow_loop(inputs["A"], inputs["B"]), rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(M=1, N=1, K=1), dict(M=3, N=17, K=33), dict(M=64, N=8, K=9)],
                         ids=lambda s: "x".join(str(s[k]) for k in SIZES))
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    assert set(inputs) == {"A", "B"}
    assert inputs["A"].shape == (sizes["M"], sizes["K"]) and inputs["B"].shape == (sizes["K"], sizes["N"])
    for value in inputs.values():
        assert value.dtype == np.float16 and value.flags.c_contiguous
        assert np.isfinite(value).all() and np.abs(value).max() <= 4
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    for name in inputs:
        np.testing.assert_array_equal(inputs[name], again[name])


def test_cancelling_distribution_cancels_exactly() -> None:
    for K in (8, 9):
        sizes = dict(M=6, N=5, K=K)
        C = REF.reference(REF.generate_inputs("cancelling", sizes, np.random.default_rng(1)), sizes)["C"]
        if K % 2 == 0:
            np.testing.assert_array_equal(C, 0.0)
        else:
            assert np.abs(C).max() <= 1.0  # the one product left over


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(M=1, N=1, K=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["A", "B", "C", *SIZES]  # the solve() signature order
    assert [p["dtype"] for p in CFG["params"][:3]] == ["float16", "float16", "float32"]
    assert set(CFG["distributions"]) == set(REF.DISTRIBUTIONS)
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    for case in cases:
        assert set(case["sizes"]) == set(SIZES), case["name"]
        for size, value in case["sizes"].items():
            assert PARAMS[size]["min"] <= value <= PARAMS[size]["max"], (case["name"], size)
        assert case["distribution"] in CFG["distributions"], case["name"]
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert any(all(s[k] == 1 for k in SIZES) for s in sizes)
    for k in SIZES:  # every size at its maximum somewhere, and off the multiples of 8 somewhere
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
        assert any(s[k] % 8 for s in sizes), k
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert PERFORMANCE["sizes"] == dict(M=4096, N=4096, K=4096)


def test_cost_model_at_the_official_size() -> None:
    n = 4096
    assert CFG["cost"]["flops"] == "2*M*N*K" and 2 * n**3 == 137_438_953_472
    assert eval(CFG["cost"]["bytes"], {}, dict(M=n, N=n, K=n)) == 134_217_728  # noqa: S307 (our own file)


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

CORRECT = {"tensor_core_order": tensor_core_order, "sequential": sequential_float32, "split_k": split_k_float32}
LONG_K = [c for c in FUNCTIONAL if c["sizes"]["K"] >= 1024]


@pytest.mark.parametrize("name", list(CORRECT))
def test_float32_accumulation_passes_every_functional_test_with_margin(name: str) -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        ref = REF.reference(inputs, case["sizes"])["C"]
        assert worst_ratio(CORRECT[name](inputs["A"], inputs["B"]), ref) <= 0.25, case["name"]


@pytest.mark.parametrize("case", LONG_K, ids=[c["name"] for c in LONG_K])
def test_half_accumulator_fails_the_long_inner_dimensions(case: dict[str, Any]) -> None:
    inputs = case_inputs(case)
    ref = REF.reference(inputs, case["sizes"])["C"]
    assert worst_ratio(tensor_core_order(inputs["A"], inputs["B"], np.float16), ref) >= 3.0
