"""Float64 oracle and input generators for sum_reduce.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("positive", "signed", "zero_sum", "large_positive")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """output[0] = sum of input, in float64.

    math.fsum would be exact; float64 pairwise summation of float32 values is
    within ~1e-16 * sum|x| of it, eleven orders below the tolerance.
    """
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(sizes["N"])
    return {"output": np.array([x.sum()])}


def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n)


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input, float32. Every element has 0.5 <= |x| <= 1.5 (times 2^100 in
    large_positive), so sum|x| <= 1.5 N and dropping any element moves the sum by
    at least 0.5."""
    n = sizes["N"]
    if distribution == "positive":
        x = rng.uniform(0.5, 1.5, n)
    elif distribution == "signed":
        # zero mean: the sum is ~sqrt(N) while sum|x| is ~N
        x = _signs(rng, n) * rng.uniform(0.5, 1.5, n)
    elif distribution == "zero_sum":
        # every value with its negation, shuffled (plus one more when N is odd):
        # the exact sum is 0 (or that one element), only atol is left to judge.
        half = _signs(rng, n // 2) * rng.uniform(0.5, 1.5, n // 2)
        odd = _signs(rng, n % 2) * rng.uniform(0.5, 1.5, n % 2)
        x = np.concatenate([half, -half, odd])[rng.permutation(n)]
    elif distribution == "large_positive":
        # ~1.3e30 each: far outside half precision, sum up to 1.3e38 < float32 max
        x = rng.uniform(0.5, 1.5, n) * 2.0**100
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": x.astype(np.float32)}
