"""Float64 oracle and input generators for sgemm_fp32.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "uniform")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """C = A @ B in float64 (C[m, n] = sum over k of A[m, k] * B[k, n])."""
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(M, K)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(K, N)
    return {"C": A @ B}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A (M, K) and B (K, N), float32."""
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    if distribution == "normal":
        # Terms of both signs: C ~ N(0, K), sums that cancel.
        A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    elif distribution == "uniform":
        # All terms positive: C ~ K/4, every partial sum grows, and rounding
        # in the accumulator is biased towards the sum's size (the case where
        # a float32 sum in order is least accurate).
        A, B = rng.uniform(0.0, 1.0, (M, K)), rng.uniform(0.0, 1.0, (K, N))
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"A": np.ascontiguousarray(A, dtype=np.float32), "B": np.ascontiguousarray(B, dtype=np.float32)}
