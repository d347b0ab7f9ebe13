"""sum_reduce: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The float32 emulations below stand in for GPU solutions: each one
sums in an order a GPU kernel uses (per-thread grid-stride sums, block trees,
block partials added by atomics in any order, two kernels), and the tolerance
must accept all of them at the largest N and reject half-precision
accumulation and dropped elements. `python tests/test_sum_reduce.py` prints
the table in spec.md, "Tolerance".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("sum_reduce")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
MAX_N = next(p["max"] for p in CFG["params"] if p["name"] == "N")
ATOL, RTOL = CH.tolerance.atol, CH.tolerance.rtol
UNIT_ROUNDOFF = 2.0**-24

# ---------------------------------------------------------------------------
# float32 summation orders, vectorised


def thread_sums(x: np.ndarray, threads: int, dtype: type = F32) -> np.ndarray:
    """Each of `threads` threads adds x[t], x[t + threads], ... in order (a grid-stride loop)."""
    rows = -(-x.size // threads)
    padded = np.zeros(rows * threads, dtype)
    padded[: x.size] = x
    acc = np.zeros(threads, dtype)
    for row in padded.reshape(rows, threads):  # row by row: sequential per thread
        acc = (acc + row).astype(dtype)
    return acc.astype(F32)


def block_trees(values: np.ndarray, width: int) -> np.ndarray:
    """Groups of `width` values reduced by a halving tree, as in shared memory."""
    groups = -(-values.size // width)
    p = np.zeros(groups * width, F32)
    p[: values.size] = values
    p = p.reshape(groups, width)
    while p.shape[1] > 1:
        half = p.shape[1] // 2
        p = p[:, :half] + p[:, half:]
    return p[:, 0]


def atomics(partials: np.ndarray, seed: int) -> float:
    """Partials added one by one into one float32 in a random order (float atomicAdd)."""
    return float(np.cumsum(np.random.default_rng(seed).permutation(partials), dtype=F32)[-1])


GRID_THREADS = 132 * 8 * 256  # a grid that fills an H200 once

SumFn = Callable[[np.ndarray], float]
CORRECT_ORDERS: dict[str, SumFn] = {
    # numpy's own float32 sum: pairwise
    "pairwise": lambda x: float(np.sum(x, dtype=F32)),
    # grid-stride per thread, block tree of 256, one atomic per block (random order)
    "threads_tree_atomics": lambda x: atomics(block_trees(thread_sums(x, GRID_THREADS), 256), 1),
    # grid-stride per thread, one atomic per warp
    "threads_warp_atomics": lambda x: atomics(block_trees(thread_sums(x, GRID_THREADS), 32), 2),
    # naive.cu: one element per thread, block tree, one atomic per block: N/256 atomics
    "block_tree_atomics": lambda x: atomics(block_trees(x, 256), 3),
    # grid-stride per thread, block trees, the partials summed by a second kernel's tree
    "two_kernels": lambda x: float(block_trees(block_trees(thread_sums(x, GRID_THREADS), 256), 2048)[0]),
}
WRONG_ORDERS: dict[str, SumFn] = {
    "half_accumulators": lambda x: atomics(block_trees(thread_sums(x, GRID_THREADS, np.float16), 256), 4),
    "dropped_tail_1024": lambda x: atomics(block_trees(thread_sums(x[: x.size // 1024 * 1024], GRID_THREADS), 256), 5),
    "dropped_last_element": lambda x: CORRECT_ORDERS["pairwise"](x[:-1]),
    # one float32 accumulator for every element: not a reasonable order at this N (spec.md)
    "single_accumulator": lambda x: atomics(x, 6) if x.size <= 2**20 else float(np.cumsum(x, dtype=F32)[-1]),
}


def ratio(value: float, inputs: dict[str, np.ndarray]) -> float:
    """|error| / (atol + rtol*|ref|) against the float64 reference: <= 1 passes."""
    ref = REF.reference(inputs, {"N": inputs["input"].size})["output"]
    return CASES.worst_ratio(np.array([value], dtype=F32), ref)


def inputs_of(distribution: str, n: int, seed: int = 2026) -> dict[str, np.ndarray]:
    return REF.generate_inputs(distribution, {"N": n}, np.random.default_rng(seed))


# ---------------------------------------------------------------------------
# the oracle, the generators, the metadata


def test_reference_reproduces_the_worked_example() -> None:
    example = CFG["tests"]["example"]
    inputs = {k: np.asarray(v, dtype=F32) for k, v in example["inputs"].items()}
    out = REF.reference(inputs, example["sizes"])["output"]
    np.testing.assert_array_equal(out, np.asarray(example["expected"]["output"]))
    # the spec's point: float32 order changes the last bits, inside the tolerance
    big_first = F32(16777216.0)
    for v in (1.0, 2.0, 3.0, 4.0):
        big_first = F32(big_first + F32(v))
    assert big_first != out[0] and ratio(float(big_first), inputs) < 0.01


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_exact_sum(distribution: str) -> None:
    inputs = inputs_of(distribution, 4099, seed=3)
    exact = math.fsum(inputs["input"].astype(np.float64).tolist())
    out = REF.reference(inputs, {"N": 4099})["output"]
    assert out.shape == (1,)
    assert abs(out[0] - exact) <= 1e-12 * max(1.0, float(np.abs(inputs["input"].astype(np.float64)).sum()))


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("n", [1, 2, 3, 1000])
def test_generate_inputs_respects_contract(distribution: str, n: int) -> None:
    CASES.check_generated(distribution, {"N": n})


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"N": 4}, np.random.default_rng(0))


def test_distributions_match_their_descriptions() -> None:
    for name in ("positive", "signed", "zero_sum"):
        x = np.abs(inputs_of(name, 10001)["input"])
        assert x.min() >= 0.5 and x.max() <= 1.5, name  # so that any dropped element shows
    assert inputs_of("positive", 1000)["input"].min() > 0
    zero = inputs_of("zero_sum", 10000)["input"].astype(np.float64)
    assert zero.sum() == 0.0 and math.fsum(zero.tolist()) == 0.0
    odd = inputs_of("zero_sum", 10001)["input"].astype(np.float64)
    assert 0.5 <= abs(math.fsum(odd.tolist())) <= 1.5
    large = inputs_of("large_positive", 1000)["input"]
    assert large.min() >= 0.5 * 2.0**100 and large.max() <= 1.5 * 2.0**100


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "output", "N"]
    sizes = [c["sizes"]["N"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= set(sizes)
    assert any(n % 32 for n in sizes if n > 32) and any(n % 1024 for n in sizes if n > 1024)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert FUNCTIONAL[0]["sizes"]["N"] > 65536  # the repeated-call test spans many blocks
    assert PERFORMANCE["sizes"]["N"] == MAX_N  # calibrated where float32 errors are largest


def test_cost_model_at_the_official_size() -> None:
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 4 * 2**26 + 4  # 268 MB, past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways (spec.md, "Tolerance")


@pytest.mark.parametrize("order", list(CORRECT_ORDERS))
def test_correct_float32_orders_pass_every_functional_test_with_margin(order: str) -> None:
    for case in FUNCTIONAL:
        inputs = CASES.case_inputs(case)
        assert ratio(CORRECT_ORDERS[order](inputs["input"]), inputs) <= 0.25, case["name"]


@pytest.fixture(scope="module")
def largest_inputs() -> dict[str, dict[str, np.ndarray]]:
    """The distributions at the largest N; signed is the official test's data."""
    data = {name: inputs_of(name, MAX_N) for name in LARGEST if name != PERFORMANCE["distribution"]}
    data[PERFORMANCE["distribution"]] = CASES.case_inputs(PERFORMANCE)
    return data


# large_positive behaves as positive scaled by 2^100 (same rounding pattern); its functional tests cover it
LARGEST = ("signed", "zero_sum", "positive")


@pytest.mark.parametrize("distribution", LARGEST)
def test_correct_orders_pass_and_wrong_ones_fail_at_the_largest_n(distribution: str, largest_inputs) -> None:
    inputs = largest_inputs[distribution]
    x = inputs["input"]
    for order in ("pairwise", "threads_tree_atomics", "block_tree_atomics"):
        assert ratio(CORRECT_ORDERS[order](x), inputs) <= 0.25, order  # 4x margin or more
    if distribution in ("signed", "zero_sum"):  # where the sum is small, atol judges
        assert ratio(WRONG_ORDERS["half_accumulators"](x), inputs) >= 4, "half"
        assert ratio(WRONG_ORDERS["dropped_last_element"](x), inputs) > 1.5, "dropped"
    if distribution == "positive":
        assert ratio(WRONG_ORDERS["single_accumulator"](x), inputs) >= 1000  # stalls at 2^25


# Where the sum is small (atol judges) any dropped element shows; in a large
# same-sign sum one element of 2^20 is below float32's own error (rtol judges).
DROP_VISIBLE = [c for c in FUNCTIONAL if c["distribution"] in ("signed", "zero_sum") or c["sizes"]["N"] <= 1025]


@pytest.mark.parametrize("case", DROP_VISIBLE, ids=[c["name"] for c in DROP_VISIBLE])
def test_dropping_the_last_element_fails(case: dict[str, Any]) -> None:
    inputs = CASES.case_inputs(case)
    x = inputs["input"].astype(np.float64)
    dropped = float(x[:-1].sum()) if x.size > 1 else 0.0
    assert ratio(dropped, inputs) > 1, case["name"]


if __name__ == "__main__":  # the table of spec.md
    for name in CFG["distributions"]:
        inputs = inputs_of(name, MAX_N) if name != PERFORMANCE["distribution"] else CASES.case_inputs(PERFORMANCE)
        x = inputs["input"]
        exact = float(x.astype(np.float64).sum())
        sum_abs = float(np.abs(x.astype(np.float64)).sum())
        print(f"{name}: sum {exact:.6g}, sum|x| {sum_abs:.6g}")
        for order, fn in {**CORRECT_ORDERS, **WRONG_ORDERS}.items():
            value = fn(x)
            err = abs(value - exact)
            print(f"  {order:22s} |err| {err:10.4g}  c = |err|/(u sum|x|) {err / (UNIT_ROUNDOFF * sum_abs):10.4g}"
                  f"  ratio {ratio(value, inputs):10.4g}")
