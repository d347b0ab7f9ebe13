"""stream_compaction: the oracle, the generators, the metadata and the exact tolerance.

CPU only. Kept elements are copied, never computed, so the policy is
exactness; what it must reject are the mistakes of tests/variants/
stream_compaction, emulated here on the test data: slots taken in the
order tiles arrive (not the order of i), zeros kept (>= for >), the last
N % 4 elements dropped, the slots past the count left unwritten.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness import expressions
from harness.testdata import make_inputs
from harness.validation import compare

CASES = ChallengeCases("stream_compaction")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
MAX_N = next(p["max"] for p in CFG["params"] if p["name"] == "N")
SMALLEST_NORMAL = np.finfo(np.float32).tiny
REFERENCE_TILE = 4096  # reference/stream_compaction.cu
VARIANT_GRID_STRIDE = 64 * 256  # tests/variants/stream_compaction/grid_stride_atomic_slots.cu


def compacted(x: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 output and int32 count of a solution that keeps `keep`, in the order of x."""
    out = np.zeros(x.size, np.float32)
    kept = x[keep]
    out[: kept.size] = kept
    return out, np.array([kept.size], np.int32)


def passes(out: np.ndarray, count: np.ndarray, expected: dict[str, np.ndarray]) -> bool:
    return (
        compare(np, "output", out, expected["output"], CH.tolerance).passed
        and compare(np, "count", count, expected["count"], CH.tolerance).passed
    )


def test_reference_reproduces_the_worked_example() -> None:
    example = CFG["tests"]["example"]
    x = np.asarray(example["inputs"]["input"], dtype=np.float32)
    out = REF.reference({"input": x}, example["sizes"])
    np.testing.assert_array_equal(out["output"], np.asarray(example["expected"]["output"], dtype=np.float64))
    np.testing.assert_array_equal(out["count"], np.asarray(example["expected"]["count"], dtype=np.float64))
    assert np.signbit(x[4]) and x[4] == 0  # the example holds a -0.0, which is not kept


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_a_plain_loop(distribution: str) -> None:
    sizes = {"N": 3001}
    x = REF.generate_inputs(distribution, sizes, np.random.default_rng(3))["input"]
    kept = [float(v) for v in x.tolist() if v > 0]
    out = REF.reference({"input": x.astype(np.float64)}, sizes)
    assert out["output"].shape == (3001,) and out["count"].shape == (1,)
    np.testing.assert_array_equal(out["output"], np.asarray(kept + [0.0] * (3001 - len(kept))))
    assert out["count"][0] == len(kept)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("n", [1, 2, 3, 4097, 100003])
def test_generate_inputs_respects_contract(distribution: str, n: int) -> None:
    """float32, shape (N,), finite, no subnormal numbers (so flushing them to
    zero cannot change a comparison), reproducible, within the constraints."""
    x = REF.generate_inputs(distribution, {"N": n}, np.random.default_rng(7))["input"]
    again = REF.generate_inputs(distribution, {"N": n}, np.random.default_rng(7))["input"]
    assert x.dtype == np.float32 and x.shape == (n,)
    assert np.isfinite(x).all()
    assert ((x == 0) | (np.abs(x) >= SMALLEST_NORMAL)).all()
    np.testing.assert_array_equal(x.view(np.uint32), again.view(np.uint32))
    for constraint in CH.constraints:
        assert bool(expressions.evaluate(constraint, {"N": n, "input": x})), constraint


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"N": 4}, np.random.default_rng(0))


def test_distributions_match_their_descriptions() -> None:
    n = 200000
    x = {d: REF.generate_inputs(d, {"N": n}, np.random.default_rng(1))["input"] for d in CFG["distributions"]}
    kept = {d: x[d] > 0 for d in x}
    assert abs(kept["random_half"].mean() - 0.5) < 0.01
    dropped = x["random_half"][~kept["random_half"]]
    assert 0.1 < (dropped == 0).mean() < 0.4 and np.signbit(dropped[dropped == 0]).any()  # +0.0 and -0.0
    assert np.abs(x["random_half"]).max() > 1e37 and np.abs(x["random_half"][x["random_half"] != 0]).min() < 1e-36
    assert kept["all_kept"].all() and not kept["none_kept"].any()
    assert (x["none_kept"] == 0).any()
    np.testing.assert_array_equal(kept["alternating"], np.arange(n) % 2 == 0)
    runs = np.flatnonzero(np.diff(kept["clustered"].astype(np.int8))).size + 1
    assert 40 < runs < 200 and 0.3 < kept["clustered"].mean() < 0.7  # ~100 runs of mean length 2000
    assert 0.0005 < kept["sparse"].mean() < 0.002


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "output", "count", "N"]
    assert CH.tolerance.atol == 0 and CH.tolerance.rtol == 0  # copies are exact
    sizes = [c["sizes"]["N"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= set(sizes)
    assert any(n % 4 and n > REFERENCE_TILE for n in sizes)  # a partial last tile, not a whole float4
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    # the repeated first test spans more than 32 tiles (a look-back window) and more than one grid stride
    assert sizes[0] > 32 * REFERENCE_TILE and sizes[0] > VARIANT_GRID_STRIDE
    assert max(sizes) <= MAX_N


def test_cost_model_at_the_official_size() -> None:
    assert PERFORMANCE["sizes"] == {"N": 2**25}
    moved = CH.cost_of("bytes", PERFORMANCE["sizes"])
    assert moved == 8 * 2**25 + 4 and moved > 100e6  # past the 50 MB L2
    assert moved / 4.0e12 > 20e-6  # the floor at ~4 TB/s


# ---------------------------------------------------------------------------
# exactness, both ways: the comparison the harness makes

# The functional tests: exactness does not depend on N, and the official size
# (2^25) would take half a minute of CPU here for nothing new.
CASES_TO_JUDGE = FUNCTIONAL


def case_data(case: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    x = make_inputs(CH, CH.test(case["name"]))["input"]
    return x, REF.reference({"input": x.astype(np.float64)}, case["sizes"])


@pytest.mark.parametrize("case", CASES_TO_JUDGE, ids=[c["name"] for c in CASES_TO_JUDGE])
def test_exact_compaction_passes_and_mistakes_fail(case: dict[str, Any]) -> None:
    x, expected = case_data(case)
    n = x.size
    keep = x > 0
    assert passes(*compacted(x, keep), expected)

    # slots in the order tiles arrive: the tiles of 4096 in reverse
    tiles = [np.arange(s, min(s + REFERENCE_TILE, n)) for s in range(0, n, REFERENCE_TILE)]
    arrival = np.concatenate(tiles[::-1])
    tiles_with_kept = sum(bool(keep[t].any()) for t in tiles)
    assert passes(*compacted(x[arrival], keep[arrival]), expected) == (tiles_with_kept <= 1)

    # zeros kept (>= instead of >)
    assert passes(*compacted(x, x >= 0), expected) == (not (x == 0).any())

    # the last N % 4 elements dropped
    dropped = keep.copy()
    dropped[n - n % 4 :] = False
    assert passes(*compacted(x, dropped), expected) == (not keep[n - n % 4 :].any())

    # the slots past the count never written (they keep the harness's NaN marker)
    untouched, count = compacted(x, keep)
    untouched[count[0] :] = np.nan
    assert passes(untouched, count, expected) == (count[0] == n)


def test_every_mistake_fails_somewhere() -> None:
    """Each emulated mistake above fails at least one functional test."""
    failures = {"order": 0, "zeros": 0, "tail": 0, "untouched": 0}
    for case in FUNCTIONAL:
        x, _ = case_data(case)
        n, keep = x.size, x > 0
        tiles = [np.arange(s, min(s + REFERENCE_TILE, n)) for s in range(0, n, REFERENCE_TILE)]
        failures["order"] += sum(bool(keep[t].any()) for t in tiles) > 1
        failures["zeros"] += bool((x == 0).any())
        failures["tail"] += bool(keep[n - n % 4 :].any())
        failures["untouched"] += int(keep.sum()) < n
    assert all(failures.values()), failures
