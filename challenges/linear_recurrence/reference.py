"""Float64 oracle and input generators for linear_recurrence.

Plain NumPy, no harness imports: the harness loads this file by path.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("moderate", "long_memory", "sign_flips", "resets")
CHUNK = 1024  # steps per chunk in the oracle's two-level evaluation


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """h[b, t] = a[b, t] * h[b, t-1] + x[b, t] with h[b, -1] = 0, in float64.

    A Python loop over 2^20 steps would take seconds, so the recurrence runs
    in two levels, exactly as spec.md's associativity note describes: inside
    every chunk of CHUNK steps from a zero state (all chunks of all rows at
    once, one step at a time), then the chunks' end states are chained from
    left to right, and each chunk adds its carried-in state times the running
    product of its a's. The test file checks this against the plain loop.
    """
    batch, seq_len = sizes["batch"], sizes["seq_len"]
    a = np.asarray(inputs["a"], dtype=np.float64).reshape(batch, seq_len)
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(batch, seq_len)
    chunks = -(-seq_len // CHUNK)
    pad = chunks * CHUNK - seq_len  # padded steps (a = 1, x = 0) come after the last real one
    # (step in chunk, batch, chunk): each step's slice is contiguous
    a = np.pad(a, ((0, 0), (0, pad)), constant_values=1.0).reshape(batch, chunks, CHUNK).transpose(2, 0, 1).copy()
    x = np.pad(x, ((0, 0), (0, pad)), constant_values=0.0).reshape(batch, chunks, CHUNK).transpose(2, 0, 1).copy()

    local = np.empty_like(x)  # the recurrence inside each chunk, from h = 0
    decay = np.empty_like(a)  # product of a[chunk start .. t]
    h = np.zeros((batch, chunks))
    p = np.ones((batch, chunks))
    for t in range(CHUNK):
        h = a[t] * h + x[t]
        p = p * a[t]
        local[t], decay[t] = h, p

    carry = np.zeros((batch, chunks))  # h just before each chunk
    for c in range(1, chunks):
        carry[:, c] = decay[-1, :, c - 1] * carry[:, c - 1] + local[-1, :, c - 1]
    out = (local + decay * carry[None]).transpose(1, 2, 0)  # back to (batch, chunk, step in chunk)
    return {"h": out.reshape(batch, chunks * CHUNK)[:, :seq_len]}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """a and x, float32, shape (batch, seq_len); x ~ N(0, 1) in every distribution."""
    shape = (sizes["batch"], sizes["seq_len"])
    if distribution == "moderate":
        a = rng.uniform(0.0, 1.0, shape)  # memory of a few steps
    elif distribution == "long_memory":
        # a within 1e-4..1e-3 of 1: every h carries the last 1000-10000 inputs,
        # |h| grows to ~50, and rounding compounds over the memory length.
        a = 1.0 - rng.uniform(1e-4, 1e-3, shape)
    elif distribution == "sign_flips":
        # |a| near 1 with random signs: the state alternates and partial
        # products change sign, which an abs/log-space shortcut gets wrong.
        a = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.99, 1.0, shape)
    elif distribution == "resets":
        # long memory, but about 1 step in 500 has a = 0 exactly: the state
        # restarts there, and no chunk carry may leak across the reset.
        a = np.where(rng.random(shape) < 0.002, 0.0, 1.0 - rng.uniform(1e-4, 1e-3, shape))
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")
    x = rng.standard_normal(shape)
    return {"a": np.ascontiguousarray(a, dtype=np.float32), "x": np.ascontiguousarray(x, dtype=np.float32)}
