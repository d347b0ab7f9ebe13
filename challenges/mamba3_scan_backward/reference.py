"""Float64 oracle and input generators for mamba3_scan_backward.

Plain NumPy, no harness imports: the harness loads this file by path. The
oracle is the reverse sweep of spec.md, "The reverse sweep", line by line; the
inputs are the forward challenge's (its generate_inputs, loaded by path) plus dy.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

import numpy as np


def _load_forward():
    path = Path(__file__).resolve().parent.parent / "mamba3_scan" / "reference.py"
    spec = importlib.util.spec_from_file_location("mamba3_scan_forward_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_FORWARD = _load_forward()
DISTRIBUTIONS = _FORWARD.DISTRIBUTIONS

# The forward states are kept every BLOCK steps and recomputed in between: the
# whole history would take 4.3 GB at the official size, this takes ~70 MB.
BLOCK = 64


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Gradients of sum(dy * y) for the Mamba-3 scan, in float64.

    Vectorised over (b, h, n, p); the loops over t are the recurrences. N x P
    matrices are held as (b, h, N/2, 2, P) row pairs, as in the forward reference,
    so that R(theta_t) and its transpose are one batched 2 x 2 product each.
    In the reverse sweep a product with an outer product S_t = B_t x_t^T is taken
    as two matrix-vector products (M x_t, then with B_t): the same sums, fewer passes.
    """
    batch, L, H = sizes["batch"], sizes["seq_len"], sizes["n_heads"]
    P, N = sizes["head_dim"], sizes["d_state"]
    f64 = lambda name: np.asarray(inputs[name], dtype=np.float64)  # noqa: E731
    x = f64("x").reshape(batch, L, H, P)
    B = f64("B").reshape(batch, L, H, N // 2, 2)
    C = f64("C").reshape(batch, L, H, N // 2, 2)
    dt = f64("dt").reshape(batch, L, H)
    A = f64("A").reshape(H)
    lam = f64("lam").reshape(batch, L, H)
    theta = f64("theta").reshape(batch, L, H, N // 2)
    skip = f64("skip").reshape(H)
    dy = f64("dy").reshape(batch, L, H, P)

    alpha = np.exp(dt * A)  # (b, t, h)
    beta = (1.0 - lam) * dt * alpha
    gamma = lam * dt
    rotation = _FORWARD.rotation_blocks  # theta_t (b, h, N/2) -> R(theta_t) as (b, h, N/2, 2, 2) blocks
    matrix = lambda a, t: a[:, t, :, None, None, None]  # noqa: E731  (b, h) -> over (i, r, p)
    vector = lambda a, t: a[:, t, :, None, None]  # noqa: E731  (b, h) -> over (i, r)
    outer = lambda u, t, v: u[:, t, :, :, :, None] * v[:, t, :, None, None, :]  # noqa: E731  u_t v_t^T

    def times(M: np.ndarray, v: np.ndarray, t: int) -> np.ndarray:
        """M v_t: (b, h, N/2, 2, P) by (b, t, h, P) -> (b, h, N/2, 2)."""
        return (M @ v[:, t, :, None, :, None])[..., 0]

    def transposed_times(M: np.ndarray, u: np.ndarray, t: int) -> np.ndarray:
        """M^T u_t: (b, h, N/2, 2, P) by (b, t, h, N/2, 2) -> (b, h, P)."""
        return (u[:, t].reshape(batch, H, 1, N) @ M.reshape(batch, H, N, P))[:, :, 0]

    def dot(M1: np.ndarray, M2: np.ndarray) -> np.ndarray:
        """Frobenius product per (b, h)."""
        return np.einsum("bhirp,bhirp->bh", M1, M2)

    def step(h_prev: np.ndarray, S_prev: np.ndarray, R: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(h_t, S_t): h_t = R(theta_t)(alpha_t h_{t-1} + beta_t S_{t-1}) + gamma_t S_t, R = R(theta_t)."""
        S = outer(B, t, x)
        v = matrix(alpha, t) * h_prev + matrix(beta, t) * S_prev
        return R @ v + matrix(gamma, t) * S, S

    blocks = [range(t0, min(t0 + BLOCK, L)) for t0 in range(0, L, BLOCK)]
    checkpoints = {}
    zero = np.zeros((batch, H, N // 2, 2, P))
    h, S = zero, zero  # h_{-1} = S_{-1} = 0
    for steps in blocks:
        checkpoints[steps.start] = h
        R = rotation(theta[:, steps.start : steps.stop])  # the block's R(theta_t), (b, t, h, N/2, 2, 2)
        for t in steps:
            h, S = step(h, S, R[:, t - steps.start], t)

    dx = np.empty((batch, L, H, P))
    dB = np.empty((batch, L, H, N // 2, 2))
    dC = np.empty((batch, L, H, N // 2, 2))
    dtheta = np.empty((batch, L, H, N // 2))
    dalpha, dbeta, dgamma = np.zeros((3, batch, L, H))  # dalpha_0 = dbeta_0 = 0: h_{-1} = S_{-1} = 0

    W_next = np.zeros((batch, H, N // 2, 2, P))  # W_L = 0: nothing after the last step
    for steps in reversed(blocks):
        t0 = steps.start
        h, S = checkpoints[t0], (outer(B, t0 - 1, x) if t0 > 0 else zero)
        R = rotation(theta[:, t0 : steps.stop])
        states = [h]  # states[k] = h_{t0+k-1}
        for t in steps:
            h, S = step(h, S, R[:, t - t0], t)
            states.append(h)
        for t in reversed(steps):
            h_t, h_prev = states[t - t0 + 1], states[t - t0]
            # alpha_{t+1}, beta_{t+1}; both 0 at the last step, where W_{t+1} = W_L = 0 anyway
            alpha_next = matrix(alpha, t + 1) if t + 1 < L else np.zeros((batch, H, 1, 1, 1))
            beta_next = vector(beta, t + 1) if t + 1 < L else np.zeros((batch, H, 1, 1))
            # G_t = dL/dh_t: this step's readout C_t dy_t^T plus what flows back through v_{t+1}
            G = outer(C, t, dy) + alpha_next * W_next
            W = np.swapaxes(R[:, t - t0], -1, -2) @ G  # W_t = dL/dv_t = R_t^T G_t
            dC[:, t] = times(h_t, dy, t)
            # dS_t = gamma_t G_t + beta_{t+1} W_{t+1} (S_t enters h_t and v_{t+1});
            # dB_t = dS_t x_t and dx_t = B_t^T dS_t + skip dy_t, taken term by term
            G_x, W_next_x = times(G, x, t), times(W_next, x, t)
            dB[:, t] = vector(gamma, t) * G_x + beta_next * W_next_x
            dx[:, t] = (
                gamma[:, t, :, None] * transposed_times(G, B, t)
                + beta_next[..., 0] * transposed_times(W_next, B, t)
                + skip[:, None] * dy[:, t]
            )
            if t > 0:
                dalpha[:, t] = dot(W, h_prev)
                dbeta[:, t] = (times(W, x, t - 1) * B[:, t - 1]).sum((-2, -1))  # <W_t, S_{t-1}>
            dgamma[:, t] = (G_x * B[:, t]).sum((-2, -1))  # <G_t, S_t>
            # d(R u)/d theta_i turns pair i a quarter further, (-u_1, u_0), where
            # u_t = R_t v_t = h_t - gamma_t S_t: dtheta_t = sum_p G_1 u_0 - G_0 u_1
            cross_h = np.einsum("bhip,bhip->bhi", G[..., 1, :], h_t[..., 0, :]) - np.einsum(
                "bhip,bhip->bhi", G[..., 0, :], h_t[..., 1, :]
            )
            cross_S = G_x[..., 1] * B[:, t, :, :, 0] - G_x[..., 0] * B[:, t, :, :, 1]
            dtheta[:, t] = cross_h - gamma[:, t, :, None] * cross_S
            W_next = W

    # chain rule through alpha = exp(dt A), beta = (1 - lam) dt alpha, gamma = lam dt
    ddt = A * alpha * dalpha + (1.0 - lam) * (1.0 + dt * A) * alpha * dbeta + lam * dgamma
    dlam = dt * (dgamma - alpha * dbeta)
    dA = (dt * alpha * (dalpha + (1.0 - lam) * dt * dbeta)).sum(axis=(0, 1))
    dskip = (x * dy).sum(axis=(0, 1, 3))
    return {
        "dx": dx,
        "dB": dB.reshape(batch, L, H, N),
        "dC": dC.reshape(batch, L, H, N),
        "ddt": ddt,
        "dA": dA,
        "dlam": dlam,
        "dtheta": dtheta,
        "dskip": dskip,
    }


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The forward challenge's inputs of `distribution` (same draws for the same rng),
    then dy ~ N(0, 1), float32."""
    inputs = _FORWARD.generate_inputs(distribution, sizes, rng)
    shape = (sizes["batch"], sizes["seq_len"], sizes["n_heads"], sizes["head_dim"])
    inputs["dy"] = rng.standard_normal(shape).astype(np.float32)
    return inputs
