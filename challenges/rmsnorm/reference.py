"""Float64 oracle and input generators for rmsnorm.

Plain NumPy, no harness imports: the harness loads this file by path. The
inputs are float16; the oracle works on their exact values in float64, one
line per line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

EPS = 1e-6  # spec.md, "Math": fixed, part of the problem
DISTRIBUTIONS = ("normal", "large_magnitude", "tiny_and_zero_rows")
ZERO_ROW_EVERY = 8  # tiny_and_zero_rows: rows 0, 8, 16, ... are all zeros


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y[r, c] = x[r, c] / sqrt(mean over c of x[r, c]^2 + eps) * weight[c], in float64."""
    rows, cols = sizes["rows"], sizes["cols"]
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(rows, cols)
    w = np.asarray(inputs["weight"], dtype=np.float64).reshape(cols)
    ms = np.einsum("rc,rc->r", x, x)[:, None] / cols  # ms[r] = (1/cols) * sum over c of x[r, c]^2
    inv_rms = 1.0 / np.sqrt(ms + EPS)  # inv_rms[r] = 1 / sqrt(ms[r] + eps)
    return {"output": x * inv_rms * w}  # y[r, c] = x[r, c] * inv_rms[r] * weight[c]


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input (rows, cols) and weight (cols,), float16. The matrix is drawn in
    float32 (the official size draws 67 M values; float16 keeps 11 bits anyway)."""
    rows, cols = sizes["rows"], sizes["cols"]
    shape = (rows, cols)
    weight = 1.0 + 0.25 * rng.standard_normal(cols)  # learned gains scatter around 1
    if distribution == "normal":
        x = rng.standard_normal(shape, dtype=np.float32)
    elif distribution == "large_magnitude":
        # Each row scaled by 10^U(1, 3.5), 10 to 3162: |x| up to ~2e4, so x^2
        # (up to ~4e8) and its row sum overflow float16's 65504; float32 holds them.
        x = (10.0 ** rng.uniform(1.0, 3.5, (rows, 1))).astype(np.float32) * rng.standard_normal(shape, dtype=np.float32)
    elif distribution == "tiny_and_zero_rows":
        # Each row scaled by 10^U(-4, -2): mean(x^2) from 1e-8 to 1e-4, around
        # eps = 1e-6, so eps changes the result; x^2 underflows float16 (below
        # 6e-8). Every ZERO_ROW_EVERY-th row is all zeros: output 0, not 0/0.
        x = (10.0 ** rng.uniform(-4.0, -2.0, (rows, 1))).astype(np.float32) * rng.standard_normal(shape, dtype=np.float32)
        x[::ZERO_ROW_EVERY] = 0.0
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": np.ascontiguousarray(x, dtype=np.float16), "weight": weight.astype(np.float16)}
