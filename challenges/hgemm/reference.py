"""Float64 oracle and input generators for hgemm.

Plain NumPy, no harness imports: the harness loads this file by path. The
inputs are float16; the oracle multiplies their exact values in float64.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("uniform", "normal", "positive", "cancelling", "wide_range")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """C[m, n] = sum over k of A[m, k] * B[k, n], in float64.

    Every product of two float16 values is exact in float64, and float64 sums of
    at most 16384 of them are off by far less than float32 rounding of C."""
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(M, K)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(K, N)
    return {"C": A @ B}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A and B as float16, |values| <= 4 in every distribution."""
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    if distribution == "uniform":
        A = rng.uniform(-1.0, 1.0, (M, K))
        B = rng.uniform(-1.0, 1.0, (K, N))
    elif distribution == "normal":
        # clipped at 4 sigma so every distribution keeps |value| <= 4
        A = np.clip(rng.standard_normal((M, K)), -4.0, 4.0)
        B = np.clip(rng.standard_normal((K, N)), -4.0, 4.0)
    elif distribution == "positive":
        # no cancellation: C grows like K/4, where a float16 accumulator has
        # a spacing of 0.5 .. 2 and loses every small product.
        A = rng.uniform(0.0, 1.0, (M, K))
        B = rng.uniform(0.0, 1.0, (K, N))
    elif distribution == "cancelling":
        # The second half of every dot product cancels the first exactly
        # (A[m, k + h] = A[m, k], B[k + h, n] = -B[k, n]), so C is 0 (or one
        # product when K is odd) while the running sums grow like sqrt(K):
        # only the absolute rounding error of the accumulation is left.
        h = K // 2
        A = rng.uniform(-1.0, 1.0, (M, K))
        B = rng.uniform(-1.0, 1.0, (K, N))
        A[:, h:2 * h] = A[:, :h]
        B[h:2 * h, :] = -B[:h, :]
    elif distribution == "wide_range":
        # magnitudes log-uniform over 2^-14 .. 2^2 (float16's normal range below
        # 4), random signs: products span 2^-28 .. 2^4.
        A = np.exp2(rng.uniform(-14.0, 2.0, (M, K))) * rng.choice([-1.0, 1.0], (M, K))
        B = np.exp2(rng.uniform(-14.0, 2.0, (K, N))) * rng.choice([-1.0, 1.0], (K, N))
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"A": np.ascontiguousarray(A, dtype=np.float16), "B": np.ascontiguousarray(B, dtype=np.float16)}
