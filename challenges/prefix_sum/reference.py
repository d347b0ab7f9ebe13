"""Float64 oracle and input generators for prefix_sum.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("positive", "signed", "large_positive")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """output[i] = input[0] + ... + input[i] (inclusive), in float64.

    np.cumsum adds sequentially; in float64 its error is below 2^-53 * N * max|x|
    (4e-9 at N = 2^25, |x| <= 1.5), eight orders below the tolerance.
    """
    x = np.asarray(inputs["input"], dtype=np.float64).reshape(sizes["N"])
    return {"output": np.cumsum(x)}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input, float32, every |x| in [0.5, 1.5] (times 2^100 in large_positive), so
    an exclusive scan or a missing element is off by at least 0.5."""
    n = sizes["N"]
    if distribution == "positive":
        x = rng.uniform(0.5, 1.5, n)
    elif distribution == "signed":
        # zero mean: the prefix wanders around 0 (~sqrt(i)) while sum|x| grows as i
        x = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
    elif distribution == "large_positive":
        x = rng.uniform(0.5, 1.5, n) * 2.0**100  # outside half precision; prefixes up to 5e37
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"input": x.astype(np.float32)}
