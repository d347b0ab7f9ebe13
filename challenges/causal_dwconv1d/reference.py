"""Float64 oracle and input generators for causal_dwconv1d.

Plain NumPy, no harness imports: the harness loads this file by path. Every
line of `reference` maps to one line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "large_offset")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y[b, t, c] = bias[c] + sum over k of weight[c, k] * x[b, t - (width-1) + k, c],
    x taken as 0 before t = 0, in float64."""
    batch, seq_len, channels, width = sizes["batch"], sizes["seq_len"], sizes["channels"], sizes["width"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(batch, seq_len, channels)
    w = np.asarray(inputs["weight"], dtype=np.float64).reshape(channels, width)
    bias = np.asarray(inputs["bias"], dtype=np.float64).reshape(channels)
    y = np.empty(x.shape)
    y[...] = bias  # y[b, t, c] = bias[c]
    for k in range(width):
        shift = width - 1 - k  # tap k reads x[b, t - shift, c]
        if shift < seq_len:  # for t < shift that step is before t = 0: x is 0 there, no term
            y[:, shift:, :] += w[:, k] * x[:, : seq_len - shift, :]
    return {"y": y}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """x (batch, seq_len, channels), weight (channels, width), bias (channels), float32."""
    batch, seq_len, channels, width = sizes["batch"], sizes["seq_len"], sizes["channels"], sizes["width"]
    weight = rng.standard_normal((channels, width)) / np.sqrt(width)
    z = rng.standard_normal((batch, seq_len, channels), dtype=np.float32)
    if distribution == "normal":
        x = z
        bias = rng.standard_normal(channels)
    elif distribution == "large_offset":
        # Every channel rides on a constant m_c, |m_c| in [8, 32], and the bias
        # cancels it: once the window is full, y = sum_k w z (of order 1) out of
        # terms of order 20; in the first width-1 steps the zero padding leaves
        # part of m_c * sum_k w uncancelled (of order 20), so any error in the
        # padding shows. Half precision keeps 5 to 7 bits after the point there.
        offset = rng.choice([-1.0, 1.0], channels) * rng.uniform(8.0, 32.0, channels)
        x = (offset + z).astype(np.float32)
        bias = -offset * weight.astype(np.float32).astype(np.float64).sum(axis=1)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"x": x.astype(np.float32), "weight": weight.astype(np.float32), "bias": bias.astype(np.float32)}
