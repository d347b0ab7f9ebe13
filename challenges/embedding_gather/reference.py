"""Exact oracle and input generators for embedding_gather.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("uniform", "one_row", "sorted", "bounds", "wide_range")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """output[i, :] = table[indices[i], :] for every i in [0, num_indices)."""
    indices = np.asarray(inputs["indices"]).astype(np.int64).reshape(sizes["num_indices"])
    table = np.asarray(inputs["table"], dtype=np.float64).reshape(sizes["vocab"], sizes["dim"])
    return {"output": table[indices]}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """indices int32 in [0, vocab); table float32 (vocab, dim)."""
    n, vocab, dim = sizes["num_indices"], sizes["vocab"], sizes["dim"]
    if distribution in ("uniform", "wide_range"):
        indices = rng.integers(0, vocab, n)
    elif distribution == "one_row":
        # every output row is the same table row: all reads hit one row
        indices = np.full(n, rng.integers(0, vocab))
    elif distribution == "sorted":
        # runs of one index and neighbouring rows, as after a sort by token id
        indices = np.sort(rng.integers(0, vocab, n))
    elif distribution == "bounds":
        # only the first and the last row: an off-by-one at either end reads outside the table
        indices = np.where(rng.random(n) < 0.5, 0, vocab - 1)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    if distribution == "wide_range":
        table = rng.choice([-1.0, 1.0], (vocab, dim)) * 10.0 ** rng.uniform(-30, 30, (vocab, dim))
    else:
        table = rng.standard_normal((vocab, dim), dtype=np.float32)
    return {"indices": indices.astype(np.int32), "table": table.astype(np.float32)}
