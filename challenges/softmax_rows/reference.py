"""Float64 oracle and input generators for softmax_rows.

Plain NumPy, no harness imports: the harness loads this file by path. Every
line of `reference` maps to one line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "large_logits", "all_equal", "one_dominant")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Row-wise softmax in float64, shifted by the row maximum."""
    rows, cols = sizes["rows"], sizes["cols"]
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(rows, cols)
    m = x.max(axis=1, keepdims=True)  # m[r] = max over c of x[r, c]
    e = np.exp(x - m)  # e[r, c] = exp(x[r, c] - m[r]), in (0, 1]
    s = e.sum(axis=1, keepdims=True)  # s[r] = sum over c of e[r, c], >= 1
    return {"output": e / s}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The logits, float32, shape (rows, cols)."""
    rows, cols = sizes["rows"], sizes["cols"]
    shape = (rows, cols)
    if distribution == "normal":
        x = rng.standard_normal(shape)
    elif distribution == "large_logits":
        # Each row centred somewhere in [-500, 500] with a spread of 10: exp of
        # the raw logits overflows float32 (above 88.7) or underflows every
        # element to zero (below -103), so only a max-shifted softmax survives.
        x = rng.uniform(-500.0, 500.0, (rows, 1)) + 10.0 * rng.standard_normal(shape)
    elif distribution == "all_equal":
        # One value per row, in the hundreds: every output is exactly 1/cols.
        x = np.broadcast_to(rng.uniform(-300.0, 300.0, (rows, 1)), shape)
    elif distribution == "one_dominant":
        # N(0, 1) with one element per row raised by 20: that output is
        # 1 - O(cols * e^-20), every other one about e^-20 (~2e-9) of it.
        x = rng.standard_normal(shape)
        x[np.arange(rows), rng.integers(0, cols, rows)] += 20.0
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": np.ascontiguousarray(x, dtype=np.float32)}
