"""vector_add: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The float32 emulations stand in for GPU solutions: one float32
rounding per element must pass with margin, a half-precision add must fail.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

CASES = ChallengeCases("vector_add")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
MAX_N = next(p["max"] for p in CFG["params"] if p["name"] == "N")


def add_float32(inputs: dict[str, np.ndarray]) -> np.ndarray:
    return inputs["A"] + inputs["B"]  # float32 arrays: one correctly rounded float32 add


def add_float16(inputs: dict[str, np.ndarray]) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (inputs["A"].astype(np.float16) + inputs["B"].astype(np.float16)).astype(np.float32)


def round_bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (round to nearest even) -> float32, in NumPy."""
    bits = x.astype(np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def add_bfloat16(inputs: dict[str, np.ndarray]) -> np.ndarray:
    return round_bfloat16(round_bfloat16(inputs["A"]) + round_bfloat16(inputs["B"]))


def test_reference_reproduces_the_worked_example() -> None:
    example = CFG["tests"]["example"]
    inputs = {k: np.asarray(v, dtype=np.float32) for k, v in example["inputs"].items()}
    C = REF.reference(inputs, example["sizes"])["C"]
    assert C.dtype == np.float64
    np.testing.assert_array_equal(C, np.asarray(example["expected"]["C"]))
    # the spec's point about the last element: float32 cannot hold 1e10 + 1
    assert add_float32(inputs)[3] == np.float32(1e10)
    assert CASES.worst_ratio(add_float32(inputs)[3:], C[3:]) <= 1.0


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_scalar_loop(distribution: str) -> None:
    sizes = {"N": 37}
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    loop = [float(a) + float(b) for a, b in zip(inputs["A"].tolist(), inputs["B"].tolist())]
    np.testing.assert_array_equal(REF.reference(inputs, sizes)["C"], np.asarray(loop))


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("n", [1, 3, 1000])
def test_generate_inputs_respects_contract(distribution: str, n: int) -> None:
    CASES.check_generated(distribution, {"N": n})


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"N": 4}, np.random.default_rng(0))


def test_distributions_match_their_descriptions() -> None:
    rng = np.random.default_rng(0)
    wide = REF.generate_inputs("wide_range", {"N": 10000}, rng)
    magnitude = np.abs(np.concatenate([wide["A"], wide["B"]]))
    assert magnitude.min() >= 1e-30 and magnitude.max() <= 1e30
    assert magnitude.min() < 1e-25 and magnitude.max() > 1e25  # really spans the range
    cancel = REF.generate_inputs("cancellation", {"N": 10000}, rng)
    exact = cancel["A"].astype(np.float64) + cancel["B"].astype(np.float64)
    assert np.all(exact != 0)
    np.testing.assert_array_equal(cancel["A"] + cancel["B"], exact)  # exact in float32
    assert np.all(np.abs(exact) <= 1.01e-3 * np.abs(cancel["A"]))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["A", "B", "C", "N"]
    sizes = [c["sizes"]["N"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= set(sizes)
    assert any(n % 32 for n in sizes if n > 32) and any(n % 1024 for n in sizes if n > 1024)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert all(c["sizes"]["N"] <= MAX_N for c in [*FUNCTIONAL, PERFORMANCE])


def test_cost_model_at_the_official_size() -> None:
    assert PERFORMANCE["sizes"] == {"N": 2**25}
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 402_653_184  # > 100 MB, past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways (spec.md, "Tolerance")

EVERY_CASE = [*FUNCTIONAL, PERFORMANCE]


@pytest.mark.parametrize("case", EVERY_CASE, ids=[c["name"] for c in EVERY_CASE])
def test_float32_add_passes_and_half_precision_fails(case: dict[str, Any]) -> None:
    inputs, ref = CASES.case_inputs(case), CASES.case_reference(case)
    # 0.5 ulp is at most 2^-24 = 0.596e-7 relative: ratio 0.596 against rtol 1e-7
    assert CASES.worst_ratio(add_float32(inputs), ref) <= 0.6
    if case["sizes"]["N"] >= 31:  # enough elements that some of them round badly
        assert CASES.worst_ratio(add_float16(inputs), ref) >= 1000
        assert CASES.worst_ratio(add_bfloat16(inputs), ref) >= 1000
