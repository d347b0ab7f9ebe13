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

# The forward states are kept every CHECKPOINT steps and recomputed in between:
# the whole history would take 4.3 GB at the official size, this takes ~130 MB.
CHECKPOINT = 64


def rotate(M: np.ndarray, c: np.ndarray, s: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """R(theta) M (sign +1) or R(theta)^T M (sign -1) for M held as row pairs (..., N/2, 2, P),
    with c, s = cos, sin of theta (..., N/2)."""
    c, s = c[..., None], sign * s[..., None]
    m0, m1 = M[..., 0, :], M[..., 1, :]
    return np.stack([c * m0 - s * m1, s * m0 + c * m1], axis=-2)


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Gradients of sum(dy * y) for the Mamba-3 scan, in float64.

    Vectorised over (b, h, n, p); the loops over t are the recurrences. N x P
    matrices are held as (N/2, 2, P) row pairs, as in the forward reference.
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
    cos, sin = np.cos(theta), np.sin(theta)
    scalar = lambda a, t: a[:, t, :, None, None, None]  # noqa: E731  (b, h) -> broadcast over (pair, 2, p)

    def write(t: int) -> np.ndarray:
        """S_t = B_t x_t^T as (b, h, N/2, 2, P); S_{-1} = 0."""
        if t < 0:
            return np.zeros((batch, H, N // 2, 2, P))
        return B[:, t, :, :, :, None] * x[:, t, :, None, None, :]

    def step(h_prev: np.ndarray, t: int) -> np.ndarray:
        """h_t = R(theta_t)(alpha_t h_{t-1} + beta_t S_{t-1}) + gamma_t S_t."""
        v = scalar(alpha, t) * h_prev + scalar(beta, t) * write(t - 1)
        return rotate(v, cos[:, t], sin[:, t]) + scalar(gamma, t) * write(t)

    # forward sweep: h_{t0-1} for every block start t0
    starts = list(range(0, L, CHECKPOINT))
    checkpoints = {}
    h = np.zeros((batch, H, N // 2, 2, P))  # h_{-1}
    for t in range(L):
        if t % CHECKPOINT == 0:
            checkpoints[t] = h
        h = step(h, t)

    dx = np.empty((batch, L, H, P))
    dB = np.empty((batch, L, H, N // 2, 2))
    dC = np.empty((batch, L, H, N // 2, 2))
    dtheta = np.empty((batch, L, H, N // 2))
    dalpha = np.empty((batch, L, H))
    dbeta = np.empty((batch, L, H))
    dgamma = np.empty((batch, L, H))

    W_next = np.zeros((batch, H, N // 2, 2, P))  # W_L = 0: nothing after the last step
    for t0 in reversed(starts):
        states = [checkpoints[t0]]  # states[k] = h_{t0+k-1}
        for t in range(t0, min(t0 + CHECKPOINT, L)):
            states.append(step(states[-1], t))
        for t in reversed(range(t0, min(t0 + CHECKPOINT, L))):
            h_t, h_prev = states[t - t0 + 1], states[t - t0]
            alpha_next = scalar(alpha, t + 1) if t + 1 < L else 0.0
            beta_next = scalar(beta, t + 1) if t + 1 < L else 0.0
            S_t, S_prev = write(t), write(t - 1)
            dy_t = dy[:, t, :, None, None, :]
            # G_t = dL/dh_t: this step's readout plus what flows back through v_{t+1}
            G = C[:, t, :, :, :, None] * dy_t + alpha_next * W_next
            W = rotate(G, cos[:, t], sin[:, t], sign=-1.0)  # W_t = dL/dv_t = R_t^T G_t
            dC[:, t] = (h_t * dy_t).sum(-1)
            dS = scalar(gamma, t) * G + beta_next * W_next  # S_t enters h_t and v_{t+1}
            dB[:, t] = (dS * x[:, t, :, None, None, :]).sum(-1)
            dx[:, t] = (dS * B[:, t, :, :, :, None]).sum((-3, -2)) + skip[None, :, None] * dy[:, t]
            dalpha[:, t] = (W * h_prev).sum((-3, -2, -1))
            dbeta[:, t] = (W * S_prev).sum((-3, -2, -1))
            dgamma[:, t] = (G * S_t).sum((-3, -2, -1))
            # d(R u)/d theta_i turns pair i a quarter further: (-u_1, u_0)
            u = h_t - scalar(gamma, t) * S_t  # u_t = R_t v_t
            dtheta[:, t] = (G[..., 1, :] * u[..., 0, :] - G[..., 0, :] * u[..., 1, :]).sum(-1)
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
