"""Exact oracle and input generators for stream_compaction.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("random_half", "all_kept", "none_kept", "alternating", "clustered", "sparse")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The elements with input[i] > 0, in order of i, then zeros up to N; their number."""
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(sizes["N"])
    kept = x[x > 0]  # boolean indexing keeps the order of i
    output = np.zeros(sizes["N"])
    output[: kept.size] = kept
    return {"output": output, "count": np.array([kept.size], dtype=np.float64)}


def _magnitudes(n: int, rng: np.random.Generator) -> np.ndarray:
    """2^e * U(1, 2), e uniform in [-126, 127]: normal float32 numbers of every size, none subnormal."""
    return np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(-126, 128, n)).astype(np.float32)


def _non_positive(n: int, rng: np.random.Generator) -> np.ndarray:
    """Negative numbers, with 1 in 8 each of +0.0 and -0.0 (neither is kept)."""
    x = -_magnitudes(n, rng)
    zeros = rng.random(n)
    x[zeros < 0.125] = 0.0
    x[(zeros >= 0.125) & (zeros < 0.25)] = -0.0
    return x


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input, float32, finite, no subnormal numbers; which elements are positive
    is the distribution."""
    n = sizes["N"]
    if distribution == "random_half":
        keep = rng.random(n) < 0.5
    elif distribution == "all_kept":
        keep = np.ones(n, dtype=bool)
    elif distribution == "none_kept":
        keep = np.zeros(n, dtype=bool)
    elif distribution == "alternating":
        keep = np.arange(n) % 2 == 0
    elif distribution == "clustered":
        # runs of geometric length (mean 2000), kept and dropped in turn, starting at random
        lengths = rng.geometric(1 / 2000, n // 1000 + 2)
        runs = np.arange(lengths.size) % 2 == rng.integers(0, 2)
        keep = np.repeat(runs, lengths)[:n]
        keep = np.concatenate([keep, np.zeros(n - keep.size, dtype=bool)])
    elif distribution == "sparse":
        keep = rng.random(n) < 0.001
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    x = np.where(keep, _magnitudes(n, rng), _non_positive(n, rng))
    return {"input": x.astype(np.float32)}
