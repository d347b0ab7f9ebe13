"""Float64 oracle and input generators for mamba3_scan.

Plain NumPy, no harness imports: the harness loads this file by path. Every
line of `reference` maps to one line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("moderate", "long_memory", "fast_decay", "large_angles", "lam_one", "mamba_like")


def rotation_blocks(theta: np.ndarray) -> np.ndarray:
    """R(theta) as its 2 x 2 diagonal blocks: theta (..., N/2) -> (..., N/2, 2, 2), block i
    [[cos, -sin], [sin, cos]] of theta[..., i], acting on rows (2i, 2i+1)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([np.stack([c, -s], axis=-1), np.stack([s, c], axis=-1)], axis=-2)


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y for the Mamba-3 scan, in float64: the plain recurrence of spec.md.

    Vectorised over (b, h, n, p); the loop over t is the recurrence itself. The
    N x P matrices (state h and S) are held as (N/2, 2, P): row pairs, so that
    R(theta_t) is one batched 2 x 2 matrix product. Only one state and one S
    exist at a time, so the official size needs ~1 MB per array, not 4 GB.
    """
    batch, seq_len, n_heads = sizes["batch"], sizes["seq_len"], sizes["n_heads"]
    P, N = sizes["head_dim"], sizes["d_state"]
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(batch, seq_len, n_heads, P)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(batch, seq_len, n_heads, N // 2, 2)
    C = np.asarray(inputs["C"], dtype=np.float64).reshape(batch, seq_len, n_heads, N)
    dt = np.asarray(inputs["dt"], dtype=np.float64).reshape(batch, seq_len, n_heads)
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(n_heads)
    lam = np.asarray(inputs["lam"], dtype=np.float64).reshape(batch, seq_len, n_heads)
    theta = np.asarray(inputs["theta"], dtype=np.float64).reshape(batch, seq_len, n_heads, N // 2)
    skip = np.asarray(inputs["skip"], dtype=np.float64).reshape(n_heads)

    pairs = (batch, n_heads, N // 2, 2, P)
    h = np.zeros(pairs)  # h_{-1} = 0
    S_prev = np.zeros(pairs)  # S_{-1} = 0
    y = np.empty((batch, seq_len, n_heads, P))
    for t in range(seq_len):
        alpha = np.exp(dt[:, t] * A)[..., None, None, None]  # (b, h, 1, 1, 1)
        beta = (1.0 - lam[:, t, :, None, None, None]) * dt[:, t, :, None, None, None] * alpha
        gamma = lam[:, t, :, None, None, None] * dt[:, t, :, None, None, None]
        S = B[:, t, :, :, :, None] * x[:, t, :, None, None, :]  # B_t x_t^T
        h = rotation_blocks(theta[:, t]) @ (alpha * h + beta * S_prev) + gamma * S
        # C_t^T h_t as a batched (1, N) @ (N, P) product, plus the skip term
        y[:, t] = (C[:, t, :, None, :] @ h.reshape(batch, n_heads, N, P))[:, :, 0, :] + skip[None, :, None] * x[:, t]
        S_prev = S
    return {"y": y}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Every input of solve(), float32, satisfying dt > 0, A < 0, 0 <= lam <= 1.

    x, B, C and skip are standard normal in every distribution; the
    distributions differ in the decay per step dt*|A|, in lam and in the angles.
    """
    batch, seq_len, n_heads = sizes["batch"], sizes["seq_len"], sizes["n_heads"]
    P, N = sizes["head_dim"], sizes["d_state"]
    if N % 2:
        raise ValueError(f"d_state must be even (rotations act on pairs of rows), got {N}")
    step = (batch, seq_len, n_heads)
    pairs = (batch, seq_len, n_heads, N // 2)

    lam = rng.uniform(0.0, 1.0, step)
    if distribution in ("moderate", "lam_one", "large_angles"):
        # dt*|A| in [1e-4, 1.02]: memory from ~1 to ~10^4 steps.
        dt = rng.uniform(0.01, 1.01, step)
        A = -rng.uniform(0.01, 1.01, n_heads)
        # large_angles: many turns per step, so sin/cos need a real argument
        # reduction and a float32 running sum of angles loses whole radians' bits.
        limit = 100.0 if distribution == "large_angles" else 1.0
        theta = rng.uniform(-limit, limit, pairs)
        if distribution == "lam_one":
            lam = np.ones(step)  # beta = 0: only the current step's write
    elif distribution == "long_memory":
        # dt*|A| in [1e-5, 1e-3]: alpha within 1e-3 of 1, every state keeps
        # thousands of past writes and rounding in h accumulates.
        dt = rng.uniform(0.01, 0.1, step)
        A = -rng.uniform(1e-3, 1e-2, n_heads)
        theta = rng.uniform(-0.1, 0.1, pairs)
    elif distribution == "fast_decay":
        # dt*|A| in [1, 64]: alpha down to 1.6e-28, the state is mostly the last two writes.
        dt = rng.uniform(1.0, 4.0, step)
        A = -rng.uniform(1.0, 16.0, n_heads)
        theta = rng.uniform(-1.0, 1.0, pairs)
    elif distribution == "mamba_like":
        # dt log-uniform in Mamba's dt range [1e-3, 1e-1], A in Mamba-2's range
        # -[1, 16], angles proportional to dt (a data-dependent rotary frequency).
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), step))
        A = -rng.uniform(1.0, 16.0, n_heads)
        theta = dt[..., None] * rng.uniform(-10.0, 10.0, pairs)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")

    out = {
        "x": rng.standard_normal((batch, seq_len, n_heads, P)),
        "B": rng.standard_normal((batch, seq_len, n_heads, N)),
        "C": rng.standard_normal((batch, seq_len, n_heads, N)),
        "dt": dt,
        "A": A,
        "lam": lam,
        "theta": theta,
        "skip": rng.standard_normal(n_heads),
    }
    # Rounding to float32 keeps every constraint: dt >= 1e-3 and |A| >= 1e-3 are far
    # above float32's smallest normal, and U(0, 1) and 1.0 round into [0, 1].
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in out.items()}
