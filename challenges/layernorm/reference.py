"""Float64 oracle and input generators for layernorm.

Plain NumPy, no harness imports: the harness loads this file by path. Every
line of `reference` maps to one line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

EPS = 1e-5  # spec.md, "Math": fixed, part of the problem
DISTRIBUTIONS = ("normal", "large_mean", "flat_rows")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y[r, c] = (x[r, c] - mean[r]) / sqrt(var[r] + eps) * gamma[c] + beta[c], in float64."""
    rows, cols = sizes["rows"], sizes["cols"]
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(rows, cols)
    gamma = np.asarray(inputs["gamma"], dtype=np.float64).reshape(cols)
    beta = np.asarray(inputs["beta"], dtype=np.float64).reshape(cols)
    mean = x.mean(axis=1, keepdims=True)  # mean[r] = (1/cols) * sum over c of x[r, c]
    d = x - mean  # d[r, c] = x[r, c] - mean[r]
    var = np.einsum("rc,rc->r", d, d)[:, None] / cols  # var[r] = (1/cols) * sum over c of d[r, c]^2 (biased)
    return {"output": d / np.sqrt(var + EPS) * gamma + beta}  # y[r, c] = d[r, c] / sqrt(var[r] + eps) * gamma[c] + beta[c]


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input (rows, cols), gamma and beta (cols,), float32."""
    rows, cols = sizes["rows"], sizes["cols"]
    shape = (rows, cols)
    gamma = 1.0 + 0.25 * rng.standard_normal(cols)  # learned gain and bias
    beta = 0.25 * rng.standard_normal(cols)
    noise = rng.standard_normal(shape, dtype=np.float32)
    if distribution == "normal":
        x = noise
    elif distribution == "large_mean":
        # Row r is s * (m + N(0, 1)) with |m| = 10^U(2, 2.5), 100 to 316 standard
        # deviations from zero, and a scale s = 10^U(-1, 1): E[x^2] - E[x]^2
        # subtracts two numbers that agree to 4-5 digits and float32 keeps ~7.
        scale = 10.0 ** rng.uniform(-1.0, 1.0, (rows, 1))
        offset = rng.choice([-1.0, 1.0], (rows, 1)) * 10.0 ** rng.uniform(2.0, 2.5, (rows, 1))
        x = (scale * offset).astype(np.float32) + scale.astype(np.float32) * noise
    elif distribution == "flat_rows":
        # Every row a constant from U(-0.002, 0.002); the odd rows add
        # N(0, 1e-3^2): var is 0 or ~1e-6, below eps = 1e-5, so eps sets the
        # scale (0/0 without it) and the output is (x - mean) * ~300: an error
        # in the mean is amplified 300 times. (The constant is kept small for
        # that reason: a float32 sum of 4096 equal values near 1 drifts by
        # ~6e-5 in a single thread, 0.02 after the amplification.)
        x = rng.uniform(-0.002, 0.002, (rows, 1)) + 1e-3 * noise
        x[::2] = x[::2, :1]
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {
        "input": np.ascontiguousarray(x, dtype=np.float32),
        "gamma": gamma.astype(np.float32),
        "beta": beta.astype(np.float32),
    }
