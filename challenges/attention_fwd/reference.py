"""Float64 oracle and input generators for attention_fwd.

Plain NumPy, no harness imports: the harness loads this file by path. The
inputs are float16; the oracle works on their exact values in float64.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("normal", "large_logits", "equal_keys", "offset_values")
QUERY_BLOCK = 512  # queries per step: a (512, seq_len) float64 score block is at most 64 MB


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """O = softmax(Q K^T / sqrt(head_dim) + causal mask) V, per (batch, head), in float64.

    Queries go in blocks of QUERY_BLOCK; a block ending at query e needs keys
    0..e only (the rest are masked), which halves the work of the causal product."""
    batch, heads, seq_len, head_dim = (sizes[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    shape = (batch * heads, seq_len, head_dim)
    Q = np.asarray(inputs["Q"], dtype=np.float64).reshape(shape)
    K = np.asarray(inputs["K"], dtype=np.float64).reshape(shape)
    V = np.asarray(inputs["V"], dtype=np.float64).reshape(shape)
    O = np.empty(shape)
    scale = 1.0 / np.sqrt(head_dim)
    for bh in range(batch * heads):
        for q0 in range(0, seq_len, QUERY_BLOCK):
            q1 = min(q0 + QUERY_BLOCK, seq_len)
            S = (Q[bh, q0:q1] @ K[bh, :q1].T) * scale  # (queries, keys 0..q1-1)
            S[np.arange(q0, q1)[:, None] < np.arange(q1)[None, :]] = -np.inf  # key j > query i: masked
            S -= S.max(axis=1, keepdims=True)  # the row max: exp cannot overflow
            P = np.exp(S)
            O[bh, q0:q1] = (P @ V[bh, :q1]) / P.sum(axis=1, keepdims=True)
    return {"O": O.reshape(batch, heads, seq_len, head_dim)}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Q, K, V as float16 of shape (batch, heads, seq_len, head_dim)."""
    shape = (sizes["batch"], sizes["heads"], sizes["seq_len"], sizes["head_dim"])
    Q, K, V = (rng.standard_normal(shape) for _ in range(3))
    if distribution == "normal":
        pass  # scores q.k/sqrt(d) ~ N(0, 1): every row averages many values
    elif distribution == "large_logits":
        # Q and K scaled by 6: scores ~ N(0, 36), up to ~150, far past float32's
        # exp overflow at 88.7; attention is nearly one-hot.
        Q, K = 6.0 * Q, 6.0 * K
    elif distribution == "equal_keys":
        # Every key of a (batch, head) is the same vector: all scores of a row
        # are equal and O[i] is the plain mean of V[0..i], the longest sums.
        K = np.broadcast_to(K[:, :, :1, :], shape)
    elif distribution == "offset_values":
        # V = 8 + N(0, 1): O sits near 8, where float16's spacing is 2^-7,
        # so rounding O to float16 costs its full relative 2^-11.
        V = 8.0 + V
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    return {name: np.ascontiguousarray(x, dtype=np.float16) for name, x in (("Q", Q), ("K", K), ("V", V))}
