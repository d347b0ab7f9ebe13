"""Float64 oracle and input generators for gemv.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "large_cancel")

# large_cancel: A is about 2^20 (far past half precision's 65504) and x about
# 2^-20, so every product is about 1 while the rows' common part cancels.
LARGE = 2.0**20


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y[i] = sum over j of A[i, j] * x[j], in float64.

    Float64 products of float32 values are exact; the float64 sum is within
    ~1e-16 * sum_j |A[i, j] x[j]| of the exact one, ten orders below the tolerance.
    """
    m, n = sizes["M"], sizes["N"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(m, n)
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(n)
    return {"y": a @ x}


def _zero_sum(rng: np.random.Generator, n: int) -> np.ndarray:
    """N(0, 1) values and the negation of each, shuffled (a 0 more when n is
    odd): the sum of the float32 values is exactly 0."""
    half = rng.standard_normal(n // 2).astype(np.float32)
    return np.concatenate([half, -half, np.zeros(n % 2, np.float32)])[rng.permutation(n)]


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A (M, N) and x (N), float32. In both distributions the products
    A[i, j] * x[j] are of order 1, so sum_j |A[i, j] x[j]| is about N."""
    m, n = sizes["M"], sizes["N"]
    if distribution == "normal":
        a = rng.standard_normal((m, n), dtype=np.float32)
        x = rng.standard_normal(n, dtype=np.float32)
    elif distribution == "large_cancel":
        # A[i, j] = 2^20 (s_i + 2^-10 z_ij) and x = 2^-20 w with sum(w) = 0
        # exactly: the s_i part of every row cancels, y[i] = 2^-10 sum_j z_ij w_j
        # (about 0.001 sqrt(N)) out of terms of size ~1. Half precision
        # overflows A; TF32 or bfloat16 rounding keeps a bit or two of the z part.
        s = rng.choice([-1.0, 1.0], (m, 1)) * rng.uniform(0.5, 1.5, (m, 1))
        a = (LARGE * (s + 2.0**-10 * rng.standard_normal((m, n)))).astype(np.float32)
        x = (_zero_sum(rng, n) / np.float32(LARGE)).astype(np.float32)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"A": a, "x": x}
