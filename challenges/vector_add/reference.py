"""Float64 oracle and input generators for vector_add.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "wide_range", "cancellation")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """C[i] = A[i] + B[i] in float64 (exact for float32 inputs of similar exponents;
    otherwise within 2^-53 relative, far below float32's own rounding)."""
    n = sizes["N"]
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(n)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(n)
    return {"C": A + B}


def _log_uniform_signed(rng: np.random.Generator, n: int, low_exp: float, high_exp: float) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(low_exp, high_exp, n)


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A and B, float32, |A|, |B| <= 1e30 (so that A + B never overflows and a
    nonzero float32 sum is never subnormal)."""
    n = sizes["N"]
    if distribution == "normal":
        A, B = rng.standard_normal(n), rng.standard_normal(n)
    elif distribution == "wide_range":
        # Independent magnitudes from 1e-30 to 1e30: float32 rounding at every
        # exponent, sums of numbers far apart in size; half precision
        # (6e-8 .. 65504) overflows or flushes most of them.
        A, B = _log_uniform_signed(rng, n, -30, 30), _log_uniform_signed(rng, n, -30, 30)
    elif distribution == "cancellation":
        # B within 1e-5 .. 1e-3 of -A (relative): the float32 sum is exact
        # (Sterbenz) but keeps only the last 10 to 17 bits of the terms, which
        # a half-precision add has already rounded away. Never exactly zero.
        A = _log_uniform_signed(rng, n, -3, 3)
        B = -A * (1.0 + _log_uniform_signed(rng, n, -5, -3))
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"A": A.astype(np.float32), "B": B.astype(np.float32)}
