"""Float64 oracle and input generators for ssm_selective_scan.

Plain NumPy, no harness imports: the harness loads this file by path. Every
line of `reference` maps to one line of the math in spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("moderate", "long_memory", "fast_decay", "mamba_init")


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """y for the selective scan, in float64.

    Vectorised over (b, d, n); the loop over t is the recurrence itself. Only one
    (batch, d_model, d_state) slice of A_bar, B_bar and h exists at a time, so the
    official size needs ~1 MB per array instead of 1 GB for all t at once.
    """
    batch, seq_len = sizes["batch"], sizes["seq_len"]
    d_model, d_state = sizes["d_model"], sizes["d_state"]
    u = np.asarray(inputs["u"], dtype=np.float64).reshape(batch, seq_len, d_model)
    delta = np.asarray(inputs["delta"], dtype=np.float64).reshape(batch, seq_len, d_model)
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(d_model, d_state)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(batch, seq_len, d_state)
    C = np.asarray(inputs["C"], dtype=np.float64).reshape(batch, seq_len, d_state)
    skip = np.asarray(inputs["skip"], dtype=np.float64).reshape(d_model)

    h = np.zeros((batch, d_model, d_state))  # h[b, -1, d, n] = 0
    y = np.empty((batch, seq_len, d_model))
    for t in range(seq_len):
        dt = delta[:, t, :, None]  # (b, d, 1)
        A_bar = np.exp(dt * A[None, :, :])  # exp(delta[b,t,d] * A[d,n])
        B_bar = dt * B[:, t, None, :]  # delta[b,t,d] * B[b,t,n]
        h = A_bar * h + B_bar * u[:, t, :, None]
        # sum_n C[b,t,n] * h[b,t,d,n] as a batched (d, n) @ (n, 1) product
        y[:, t, :] = (h @ C[:, t, :, None])[:, :, 0] + skip[None, :] * u[:, t, :]
    return {"y": y}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Every input of solve(), float32, satisfying delta > 0 and A < 0.

    u, B, C and skip are standard normal in every distribution; the
    distributions differ in delta and A, which set the decay per step
    A_bar = exp(delta * A) and so how long the state remembers.
    """
    batch, seq_len = sizes["batch"], sizes["seq_len"]
    d_model, d_state = sizes["d_model"], sizes["d_state"]
    seq_shape = (batch, seq_len, d_model)
    state_shape = (d_model, d_state)

    if distribution == "moderate":
        # delta*|A| in [1e-4, 1.02]: memory from ~1 to ~10^4 steps.
        delta = rng.uniform(0.01, 1.01, seq_shape)
        A = -rng.uniform(0.01, 1.01, state_shape)
    elif distribution == "long_memory":
        # delta*|A| in [1e-5, 1e-3]: A_bar within 1e-3 of 1, so every state
        # keeps thousands of past inputs and rounding in h accumulates.
        delta = rng.uniform(0.01, 0.1, seq_shape)
        A = -rng.uniform(1e-3, 1e-2, state_shape)
    elif distribution == "fast_decay":
        # delta*|A| in [1, 64]: A_bar in [1.6e-28, 0.37], the state is mostly the
        # last input, and a fast-math exp is at its least accurate (~|x| ulp).
        delta = rng.uniform(1.0, 4.0, seq_shape)
        A = -rng.uniform(1.0, 16.0, state_shape)
    elif distribution == "mamba_init":
        # Mamba-1's initialisation: A[d, n] = -(n + 1) (S4D-real) and delta
        # log-uniform in [1e-3, 1e-1] (its dt initialisation range).
        delta = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), seq_shape))
        A = -np.broadcast_to(np.arange(1, d_state + 1, dtype=np.float64), state_shape)
    else:
        raise ValueError(f"unknown distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")

    u = rng.standard_normal(seq_shape)
    B = rng.standard_normal((batch, seq_len, d_state))
    C = rng.standard_normal((batch, seq_len, d_state))
    skip = rng.standard_normal(d_model)

    out = {"u": u, "delta": delta, "A": A, "B": B, "C": C, "skip": skip}
    # Rounding to float32 cannot break the sign constraints: every delta bound
    # is >= 1e-3 and every |A| >= 1e-3, far above float32's smallest normal.
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in out.items()}
