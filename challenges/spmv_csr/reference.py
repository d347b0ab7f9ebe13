"""Float64 oracle and input generators for spmv_csr.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("uniform", "power_law", "banded", "one_row")
RUN = 8  # power_law: a row's entries come in runs of this many adjacent columns
PARETO_SHAPE = 1.3  # power_law: row lengths follow Pareto quantiles of this shape


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y[r] = sum over k in [row_ptr[r], row_ptr[r+1]) of values[k] * x[col_idx[k]]."""
    rows, cols, nnz = sizes["rows"], sizes["cols"], sizes["nnz"]
    row_ptr = np.asarray(inputs["row_ptr"]).astype(np.int64).reshape(rows + 1)
    col_idx = np.asarray(inputs["col_idx"]).astype(np.int64).reshape(nnz)
    values = np.asarray(inputs["values"], dtype=np.float64).reshape(nnz)
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(cols)
    row_of_entry = np.repeat(np.arange(rows), np.diff(row_ptr))
    return {"y": np.bincount(row_of_entry, weights=values * x[col_idx], minlength=rows)}


def spread(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers proportional to `weights` that add up to `total` exactly (largest remainders)."""
    raw = total * weights / weights.sum()
    counts = np.floor(raw).astype(np.int64)
    short = total - int(counts.sum())
    counts[np.argsort(counts - raw, kind="stable")[:short]] += 1
    return counts


def row_lengths(distribution: str, rows: int, nnz: int, rng: np.random.Generator) -> np.ndarray:
    lengths = np.zeros(rows, np.int64)
    if distribution in ("uniform", "banded"):
        # nnz // rows per row, one more in nnz % rows rows chosen at random
        lengths[:] = nnz // rows
        lengths[rng.choice(rows, nnz % rows, replace=False)] += 1
    elif distribution == "power_law":
        # half the rows empty; the others Pareto quantiles, scaled to nnz:
        # at the official size 6 rows of 100k+ entries (the longest ~630k)
        # beside ~500k rows of 15-100, all at random row positions
        nonempty = max(1, rows // 2)
        quantiles = (np.arange(nonempty) + 0.5) / nonempty
        lengths[rng.choice(rows, nonempty, replace=False)] = rng.permutation(spread(nnz, quantiles ** (-1 / PARETO_SHAPE)))
    elif distribution == "one_row":
        lengths[rng.integers(0, rows)] = nnz
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return lengths


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A CSR matrix (row_ptr, col_idx, values) and x; |values|, |x| in [0.5, 1.5]."""
    rows, cols, nnz = sizes["rows"], sizes["cols"], sizes["nnz"]
    lengths = row_lengths(distribution, rows, nnz, rng)
    row_ptr = np.concatenate(([0], np.cumsum(lengths)))
    # int32 throughout (nnz < 2^31): these arrays are 32M long at the official size
    position = np.arange(nnz, dtype=np.int32) - np.repeat(row_ptr[:-1].astype(np.int32), lengths)  # within its row
    if distribution == "power_law":
        # aligned runs of RUN adjacent columns at random places (block structure,
        # as with several unknowns per mesh node): x is read a sector at a time
        runs_per_row = -(-lengths // RUN)
        first_run = np.repeat(np.concatenate(([0], np.cumsum(runs_per_row)[:-1])).astype(np.int32), lengths)
        run_start = RUN * rng.integers(0, max(1, cols // RUN), int(runs_per_row.sum()), dtype=np.int32)
        col_idx = run_start[first_run + position // RUN] + position % RUN
        if cols < RUN:
            col_idx %= cols
    elif distribution == "banded":
        # a contiguous run of columns centred on the diagonal (wrapping when a row is longer than cols)
        centre = np.arange(rows, dtype=np.int64) * cols // rows
        start = np.clip(centre - lengths // 2, 0, np.maximum(cols - lengths, 0))
        col_idx = (np.repeat(start.astype(np.int32), lengths) + position) % cols
    else:
        # uniform over [0, cols), unsorted, repeats allowed
        col_idx = rng.integers(0, cols, nnz, dtype=np.int32)

    def signed_magnitudes(n: int) -> np.ndarray:
        """random sign times U(0.5, 1.5), in float32"""
        m = rng.random(n, dtype=np.float32) * np.float32(2) - np.float32(1)
        return m + np.copysign(np.float32(0.5), m)

    return {
        "row_ptr": row_ptr.astype(np.int32),
        "col_idx": col_idx.astype(np.int32, copy=False),
        "values": signed_magnitudes(nnz),
        "x": signed_magnitudes(cols),
    }
