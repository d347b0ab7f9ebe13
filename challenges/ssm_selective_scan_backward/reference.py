"""Float64 oracle and input generators for ssm_selective_scan_backward.

Plain NumPy, no harness imports: the harness loads this file by path. The
inputs are the forward challenge's, drawn by its own generate_inputs (loaded
by path from ../ssm_selective_scan/reference.py), plus dy. Every line of the
reverse sweep in `reference` maps to one formula of spec.md, "Math".
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

import numpy as np

_FORWARD_PATH = Path(__file__).resolve().parent.parent / "ssm_selective_scan" / "reference.py"
_spec = importlib.util.spec_from_file_location("ssm_selective_scan_forward_reference", _FORWARD_PATH)
_forward = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_forward)

DISTRIBUTIONS = _forward.DISTRIBUTIONS

# States are recomputed segment by segment in the reverse sweep: only the
# segment's states and one checkpoint per segment are kept, so the official
# size needs ~100 MB instead of the 1 GB that every h[b, t] would take.
SEGMENT = 256


def reference(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """du, ddelta, dA, dB, dC, dskip: the gradient of sum(dy * y) in float64.

    Vectorised over (b, d, n); the loops over t are the two recurrences: the
    forward one for h (spec step 3) and the reverse one for g (spec step 5).
    """
    batch, seq_len = sizes["batch"], sizes["seq_len"]
    d_model, d_state = sizes["d_model"], sizes["d_state"]
    u = np.asarray(inputs["u"], dtype=np.float64).reshape(batch, seq_len, d_model)
    delta = np.asarray(inputs["delta"], dtype=np.float64).reshape(batch, seq_len, d_model)
    A = np.asarray(inputs["A"], dtype=np.float64).reshape(d_model, d_state)
    B = np.asarray(inputs["B"], dtype=np.float64).reshape(batch, seq_len, d_state)
    C = np.asarray(inputs["C"], dtype=np.float64).reshape(batch, seq_len, d_state)
    skip = np.asarray(inputs["skip"], dtype=np.float64).reshape(d_model)
    dy = np.asarray(inputs["dy"], dtype=np.float64).reshape(batch, seq_len, d_model)

    def a_bar(t: int) -> np.ndarray:  # step 1: exp(delta[b,t,d] * A[d,n]), (b, d, n)
        return np.exp(delta[:, t, :, None] * A[None, :, :])

    def step(h: np.ndarray, t: int) -> np.ndarray:  # step 3: h[t] from h[t-1]
        return a_bar(t) * h + delta[:, t, :, None] * B[:, t, None, :] * u[:, t, :, None]

    # Forward sweep: the state before each segment (h[-1] = 0 before the first).
    starts = list(range(0, seq_len, SEGMENT))
    checkpoints = []
    h = np.zeros((batch, d_model, d_state))
    for t in range(seq_len):
        if t % SEGMENT == 0:
            checkpoints.append(h)
        h = step(h, t)

    du = np.empty((batch, seq_len, d_model))
    ddelta = np.empty((batch, seq_len, d_model))
    dB = np.empty((batch, seq_len, d_state))
    dC = np.empty((batch, seq_len, d_state))
    dA = np.zeros((d_model, d_state))
    dskip = (dy * u).sum(axis=(0, 1))  # dL/dskip[d] = sum over b, t of dy * u

    # Reverse sweep, one segment at a time from the last, g[seq_len] = 0.
    g_next = np.zeros((batch, d_model, d_state))  # g[t+1]
    a_next = np.zeros((batch, d_model, d_state))  # A_bar[t+1]
    for start, h_before in zip(reversed(starts), reversed(checkpoints)):
        stop = min(start + SEGMENT, seq_len)
        states = [h_before]  # states[i] = h[start + i - 1]
        for t in range(start, stop):
            states.append(step(states[-1], t))
        for t in range(stop - 1, start - 1, -1):
            h_prev, h_t = states[t - start], states[t - start + 1]
            a_t = a_bar(t)
            dy_t = dy[:, t, :, None]  # (b, d, 1)
            # step 5: g[t] = C[t] * dy[t] + A_bar[t+1] * g[t+1]
            g = C[:, t, None, :] * dy_t + a_next * g_next
            dC[:, t, :] = (dy_t * h_t).sum(axis=1)  # sum over d of dy * h
            dB[:, t, :] = (g * (delta[:, t, :] * u[:, t, :])[:, :, None]).sum(axis=1)  # sum over d of g * delta * u
            gB = (g * B[:, t, None, :]).sum(axis=2)  # sum over n of g * B, (b, d)
            du[:, t, :] = skip[None, :] * dy[:, t, :] + delta[:, t, :] * gB
            q = g * a_t * h_prev  # dL/dA_bar[t] * A_bar[t]
            ddelta[:, t, :] = (q * A[None, :, :]).sum(axis=2) + u[:, t, :] * gB
            dA += (q * delta[:, t, :, None]).sum(axis=0)
            g_next, a_next = g, a_t
    return {"du": du, "ddelta": ddelta, "dA": dA, "dB": dB, "dC": dC, "dskip": dskip}


def generate_inputs(
    distribution: str, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The forward challenge's inputs for `distribution` (same draws, same
    constraints), then dy ~ N(0, 1) with y's shape, all float32."""
    inputs = _forward.generate_inputs(distribution, sizes, rng)
    dy = rng.standard_normal((sizes["batch"], sizes["seq_len"], sizes["d_model"]))
    return {**inputs, "dy": dy.astype(np.float32)}
