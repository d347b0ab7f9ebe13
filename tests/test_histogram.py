"""histogram: the oracle, the generators, the metadata and the exact tolerance.

CPU only. Counts are integers, so the policy is exactness: a count off by
one fails, which is what lost atomic updates, unzeroed bins and dropped
tails produce (tests/variants/histogram runs them as CUDA).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases
from harness import expressions
from harness.validation import compare

CASES = ChallengeCases("histogram")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
LIMITS = {p["name"]: (p["min"], p["max"]) for p in CFG["params"] if p["role"] == "size"}


def check_generated(distribution: str, sizes: dict[str, int]) -> np.ndarray:
    """generate_inputs keeps its contract: int32 keys of shape (N,) in [0, num_bins), reproducible."""
    keys = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))["input"]
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))["input"]
    assert keys.dtype == np.int32 and keys.shape == (sizes["N"],)
    assert keys.min() >= 0 and keys.max() < sizes["num_bins"]
    np.testing.assert_array_equal(keys, again)
    return keys


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_reference_matches_a_counting_loop(distribution: str) -> None:
    sizes = {"N": 5003, "num_bins": 37}
    keys = check_generated(distribution, sizes)
    counts = [0] * sizes["num_bins"]
    for k in keys.tolist():
        counts[k] += 1
    out = REF.reference({"input": keys}, sizes)["histogram"]
    assert out.shape == (37,)
    np.testing.assert_array_equal(out, np.asarray(counts, dtype=np.float64))


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [{"N": 1, "num_bins": 1}, {"N": 3, "num_bins": 1048576}, {"N": 10007, "num_bins": 256}])
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    keys = check_generated(distribution, sizes)
    for constraint in CH.constraints:
        assert bool(expressions.evaluate(constraint, {**sizes, "input": keys})), constraint


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", {"N": 4, "num_bins": 4}, np.random.default_rng(0))


def test_distributions_match_their_descriptions() -> None:
    sizes = {"N": 100000, "num_bins": 256}
    counts = {name: np.bincount(check_generated(name, sizes), minlength=256) for name in CFG["distributions"]}
    assert (counts["one_bin"] > 0).sum() == 1
    assert counts["uniform"].min() > 0.8 * 100000 / 256 and counts["uniform"].max() < 1.2 * 100000 / 256
    top = np.sort(counts["zipf"])[::-1]
    assert top[0] > 0.2 * 100000 and top[:8].sum() > 0.5 * 100000  # a few hot bins carry most keys
    assert (counts["zipf"] > 0).sum() > 200  # and a long tail
    keys = check_generated("sorted", sizes)
    assert np.all(np.diff(keys) >= 0)


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["input", "histogram", "N", "num_bins"]
    assert CH.tolerance.atol == 0 and CH.tolerance.rtol == 0  # counts are exact
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {1, 2, 3} <= {s["N"] for s in sizes}
    assert any(s["num_bins"] == 1 for s in sizes)
    assert any(s["num_bins"] == LIMITS["num_bins"][1] and s["N"] < s["num_bins"] for s in sizes)  # mostly empty bins
    assert any(s["num_bins"] == LIMITS["num_bins"][1] and s["N"] > 10**6 for s in sizes)
    assert any(s["N"] % 4 and s["N"] > 1024 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert FUNCTIONAL[0]["sizes"]["N"] > 65536  # the repeated-call test spans many blocks


def test_cost_model_at_the_official_size() -> None:
    assert PERFORMANCE["sizes"] == {"N": 2**26, "num_bins": 256}
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 4 * 2**26 + 4 * 256  # 268 MB, past the 50 MB L2


# ---------------------------------------------------------------------------
# exactness, both ways: the comparison the harness makes


@pytest.mark.parametrize("case", FUNCTIONAL, ids=[c["name"] for c in FUNCTIONAL])
def test_exact_counts_pass_and_one_lost_update_fails(case: dict[str, Any]) -> None:
    keys, ref = CASES.case_inputs(case)["input"], CASES.case_reference(case)
    exact = np.bincount(keys, minlength=case["sizes"]["num_bins"]).astype(np.int32)
    assert compare(np, "histogram", exact, ref, CH.tolerance).passed
    lost = exact.copy()
    lost[keys[-1]] -= 1  # one update lost, or the last key dropped
    assert compare(np, "histogram", lost, ref, CH.tolerance).mismatches == 1
