"""Exact oracle and input generators for row_topk.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("uniform", "few_distinct", "all_equal", "ascending", "descending", "extremes", "tied_top")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UNWRITTEN_MARKER = 0x7FC0FFEE  # the harness's marker for an int32 output never written: no key may equal it


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Each row ordered by key descending, equal keys by column ascending; the first k.

    That order as one integer per element: rank = (INT32_MAX - key) * cols + column
    is smaller exactly when the element comes first, and distinct (below 2^46
    in int64). The k smallest ranks of each row (a partition, O(cols)), then
    sorted: the answer of a stable sort of the whole row, without that sort.
    """
    rows, cols, k = sizes["rows"], sizes["cols"], sizes["k"]
    keys = np.asarray(inputs["input"], dtype=np.float64).reshape(rows, cols)
    rank = keys.astype(np.int64)
    np.subtract(INT32_MAX, rank, out=rank)  # in place: the official input is 67 M keys
    rank *= cols
    rank += np.arange(cols)
    top = np.argpartition(rank, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(top, np.argsort(np.take_along_axis(rank, top, axis=1), axis=1), axis=1)
    return {"values": np.take_along_axis(keys, order, axis=1), "indices": order.astype(np.float64)}


def _uniform(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    return rng.integers(INT32_MIN, INT32_MAX, shape, endpoint=True, dtype=np.int64)


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """input, int32, rows x cols, never the unwritten-output marker."""
    shape = (sizes["rows"], sizes["cols"])
    if distribution == "uniform":
        keys = _uniform(shape, rng)
    elif distribution == "few_distinct":
        # 5 values per row, drawn anew for every row
        palette = _uniform((shape[0], 5), rng)
        keys = np.take_along_axis(palette, rng.integers(0, 5, shape), axis=1)
    elif distribution == "all_equal":
        keys = np.repeat(_uniform((shape[0], 1), rng), shape[1], axis=1)
    elif distribution == "ascending":
        keys = np.sort(_uniform(shape, rng), axis=1)
    elif distribution == "descending":
        keys = -np.sort(-_uniform(shape, rng), axis=1)
    elif distribution == "tied_top":
        # uniform, then the row's largest, 9th and 30th largest keys each copied
        # over 3 columns outside its top 32 (distinct random ones): equal keys
        # at the top, inside the top k and at its edge, in rows otherwise distinct
        keys = _uniform(shape, rng)
        order = np.argsort(-keys, axis=1, kind="stable")
        spare = order[:, 32:]  # columns outside the top 32
        chosen = np.take_along_axis(spare, np.argsort(rng.random(spare.shape), axis=1)[:, :9], axis=1)
        for i, place in enumerate(place for place in (0, 8, 29) if place < shape[1]):
            copies = chosen[:, 3 * i : 3 * i + 3]
            source = np.take_along_axis(keys, order[:, place : place + 1], axis=1)
            np.put_along_axis(keys, copies, np.broadcast_to(source, copies.shape), axis=1)
    elif distribution == "extremes":
        palette = np.array([INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX])
        keys = palette[rng.integers(0, palette.size, shape)]
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    keys[keys == UNWRITTEN_MARKER] -= 1
    return {"input": keys.astype(np.int32)}
