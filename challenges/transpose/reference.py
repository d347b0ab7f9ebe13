"""Float64 oracle and input generators for transpose.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "wide_range")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """output[c, r] = input[r, c]."""
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(sizes["rows"], sizes["cols"])
    return {"output": np.ascontiguousarray(x.T)}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The matrix, float32, shape (rows, cols)."""
    shape = (sizes["rows"], sizes["cols"])
    if distribution == "normal":
        x = rng.standard_normal(shape)
    elif distribution == "wide_range":
        # Magnitudes from 1e-30 to 1e30 with both signs: any arithmetic on the
        # values (a scale, a sum with 0 done in half precision) shows.
        x = rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-30.0, 30.0, shape)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": np.ascontiguousarray(x, dtype=np.float32)}
