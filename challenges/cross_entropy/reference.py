"""Float64 oracle and input generators for cross_entropy.

Plain NumPy, no harness imports: the harness loads this file by path. The
logits are float16; the oracle works on their exact values in float64, one
line per line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

IGNORE_INDEX = -100  # spec.md, "Math": PyTorch's default ignore_index
DISTRIBUTIONS = ("normal", "confident", "large_magnitude", "ignored_and_extremes")
HALF_MAX = 65504.0  # the largest finite float16
PATTERN = 5  # ignored_and_extremes: row r does what r % PATTERN says (generate_inputs)


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """loss[r] = log(sum over c of exp(logits[r, c])) - logits[r, labels[r]], 0 where labels[r] = -100."""
    rows, vocab = sizes["rows"], sizes["vocab"]
    x = np.asarray(inputs["logits"], dtype=np.float64).reshape(rows, vocab)
    labels = np.asarray(inputs["labels"]).astype(np.int64).reshape(rows)
    kept = labels != IGNORE_INDEX
    m = x.max(axis=1)  # m[r] = max over c of x[r, c]
    s = np.exp(x - m[:, None]).sum(axis=1)  # s[r] = sum over c of exp(x[r, c] - m[r]), >= 1
    picked = x[np.arange(rows), np.where(kept, labels, 0)]  # x[r, labels[r]] (any column where ignored)
    return {"loss": np.where(kept, (m - picked) + np.log(s), 0.0)}  # (m[r] - x[r, labels[r]]) + log(s[r])


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """logits (rows, vocab) float16 and labels (rows,) int32. The logits are
    drawn in float32 (the official size draws 131 M values; float16 keeps 11
    bits anyway)."""
    rows, vocab = sizes["rows"], sizes["vocab"]
    shape = (rows, vocab)
    labels = rng.integers(0, vocab, rows)
    if distribution == "normal":
        x = 2.0 * rng.standard_normal(shape, dtype=np.float32)
    elif distribution == "confident":
        # The label's logit stands 12 to 20 above N(0, 1) noise: the loss is
        # about 1.65 * vocab * exp(-raise), from 1e-8 (vocab 3) to 0.3 (vocab
        # 32000), while log-sum-exp and the label's logit are 12 to 25.
        x = rng.standard_normal(shape, dtype=np.float32)
        x[np.arange(rows), labels] += rng.uniform(12.0, 20.0, rows).astype(np.float32)
    elif distribution == "large_magnitude":
        # Each row N(0, 4^2) around a shift from U(-2000, 2000): exp of a raw
        # logit overflows float32 (above 88.7) or underflows to 0 (below
        # -103.9). float16 spaces values 0.5 to 2 apart there, so rows hold ties.
        x = rng.uniform(-2000.0, 2000.0, (rows, 1)).astype(np.float32) + 4.0 * rng.standard_normal(shape, dtype=np.float32)
    elif distribution == "ignored_and_extremes":
        # N(0, 2^2), and row r by r % PATTERN: 0 ignored (label -100), 1 label 0,
        # 2 label vocab - 1, 3 every logit one value from U(-2000, 2000) (loss
        # log(vocab)), 4 one logit +65504 and one -65504 (float16's extremes;
        # the loss is 0, about 65504 or 131008: finite).
        x = 2.0 * rng.standard_normal(shape, dtype=np.float32)
        kind = np.arange(rows) % PATTERN
        labels[kind == 0] = IGNORE_INDEX
        labels[kind == 1] = 0
        labels[kind == 2] = vocab - 1
        x[kind == 3] = rng.uniform(-2000.0, 2000.0, (int((kind == 3).sum()), 1)).astype(np.float32)
        extreme = np.flatnonzero(kind == 4)
        x[extreme, rng.integers(0, vocab, extreme.size)] = -HALF_MAX
        x[extreme, rng.integers(0, vocab, extreme.size)] = HALF_MAX  # second: where both land on one column it stays
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {"logits": np.ascontiguousarray(x, dtype=np.float16), "labels": labels.astype(np.int32)}
