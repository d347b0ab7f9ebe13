"""Exact oracle and input generators for histogram.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("uniform", "one_bin", "zipf", "sorted")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """histogram[b] = number of i with input[i] == b, for every b in [0, num_bins)."""
    keys = np.asarray(inputs["input"]).astype(np.int64).reshape(sizes["N"])
    return {"histogram": np.bincount(keys, minlength=sizes["num_bins"]).astype(np.float64)}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input, int32, every key in [0, num_bins)."""
    n, bins = sizes["N"], sizes["num_bins"]
    if distribution == "uniform":
        keys = rng.integers(0, bins, n)
    elif distribution == "one_bin":
        # every key the same: every atomic of every thread hits one counter
        keys = np.full(n, rng.integers(0, bins))
    elif distribution == "zipf":
        # rank r (0, 1, 2, ...) with probability ~ 1/(r+1)^1.3, folded into the
        # bins, ranks assigned to bins at random: a few hot bins, a long tail
        ranks = (rng.zipf(1.3, n) - 1) % bins
        keys = rng.permutation(bins)[ranks]
    elif distribution == "sorted":
        # uniform keys in increasing order: long runs of one key per warp and block
        keys = np.sort(rng.integers(0, bins, n))
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": keys.astype(np.int32)}
