"""The chunked backward of mamba3_scan in float64 NumPy: the algorithm of
solutions/mamba3_scan_backward/chunked_3xtf32.cu, step for step, checked against
the challenge's oracle (challenges/mamba3_scan_backward/reference.py).

    python reference/mamba3_scan_backward_chunked.py      # every functional test

Per chunk of L steps starting at t0 (local index t = 0 .. L-1), angles run from the
chunk start, Phi_t = theta_0 + ... + theta_t per row pair, Bg_t = R(-Phi_t) B_t,
Cr_t = R(-Phi_t) C_t, cl_t = sum_{r<=t} dt_r A, Dec_ts = exp(cl_t - cl_s),
bn_t = (1 - lam_t) dt_t, e_t = gamma_t + bn_{t+1} (bn of the next chunk's first step at
t = L-1, 0 past the sequence). In the frame g_t = R(-Phi_t) h_t the state is
    g_t = dec_t Gin + sum_{s<=t} Dec_ts e_ts Bg_s x_s^T     (e_ts = gamma_s at s = t, e_s below)
with Gin = h_{t0-1} + bn_t0 B_{t0-1} x_{t0-1}^T, and the adjoint Gam_t = dL/dg_t is
    Gam_t = sum_{s>=t} Dec_st Cr_s dy_s^T + decend_t Gfut,    decend_t = exp(cl_end - cl_t),
with Gfut = R(-Phi_end) dGin(c+1), dGin the adjoint of the next chunk's carried state.
Carries between chunks (N x P, sequential over chunks):
    Gin(c+1)  = R(Phi_end) (dec_end Gin(c) + Agg_c),     Agg_c  = sum_s decend_s e_s Bg_s x_s^T
    dGin(c)   = dec_end Gfut(c) + BAgg_c,                 BAgg_c = sum_s dec_s Cr_s dy_s^T
Inside a chunk, with the L x L lower triangles Q_ts = Cr_t . Bg_s and D_ts = dy_t . x_s (s <= t):
    dCr_t = sum_{s<=t} Dec_ts e_ts D_ts Bg_s + dec_t Gin dy_t             (= g_t dy_t)
    Gx_t  = sum_{s>=t} Dec_st D_st Cr_s + decend_t Gfut x_t               (= Gam_t x_t)
    Xb_t  = sum_{s>=t} Dec_st Q_st dy_s + decend_t Gfut^T Bg_t            (= Gam_t^T Bg_t)
    dB_t  = R(Phi_t) (e_t Gx_t - bn_{t+1} xy_t Cr_t),    dC_t = R(Phi_t) dCr_t
    dx_t  = e_t Xb_t + (skip - bn_{t+1} BC_t) dy_t       (BC_t = Q_tt, xy_t = D_tt)
    dgamma_t = Bg_t . Gx_t,   alpha_t dbeta_t = dgamma_{t-1} - BC_{t-1} xy_{t-1}
                              (t = 0: B_{t0-1} . dGin(c) x_{t0-1})
    dcl_t = Cr_t . dCr_t - e_t dgamma_t + bn_{t+1} BC_t xy_t  (+ <dGin(c+1), Gin(c+1)> at t = L-1)
    dloga_t = sum_{u>=t} dcl_u              (the gradient of log alpha_t = dt_t A, bn held fixed)
    dPhi_t[i] = cross_i(dCr_t, Cr_t) + cross_i(dBg_t, Bg_t)   (+ cross_i(Gin(c+1), dGin(c+1)) at t = L-1)
    dtheta_t = sum_{u>=t} dPhi_u,   cross_i(u, v) = sum over columns of u[2i] v[2i+1] - u[2i+1] v[2i]
and, through log alpha = dt A, gamma = lam dt, bn = (1 - lam) dt:
    ddt = A dloga + lam dgamma + (1 - lam) alpha dbeta,   dlam = dt (dgamma - alpha dbeta),
    dA = sum dt dloga,   dskip = sum xy.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 64


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rot(M: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """R(phi) applied to the row pairs of M (..., N, k) with c, s = cos, sin of phi (..., N/2)."""
    out = np.empty_like(M)
    c, s = c[..., None], s[..., None]
    out[..., 0::2, :] = c * M[..., 0::2, :] - s * M[..., 1::2, :]
    out[..., 1::2, :] = s * M[..., 0::2, :] + c * M[..., 1::2, :]
    return out


def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per row pair i: sum over the last axis of u[2i] v[2i+1] - u[2i+1] v[2i]; u, v (..., N, k)."""
    return (u[..., 0::2, :] * v[..., 1::2, :] - u[..., 1::2, :] * v[..., 0::2, :]).sum(-1)


def backward_chunked(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], L: int = CHUNK) -> dict[str, np.ndarray]:
    batch, T, H = sizes["batch"], sizes["seq_len"], sizes["n_heads"]
    P, N = sizes["head_dim"], sizes["d_state"]
    f = lambda k: np.asarray(inputs[k], dtype=np.float64)  # noqa: E731
    nc = -(-T // L)
    Tp = nc * L
    pad = lambda a: np.concatenate([a, np.zeros((batch, Tp - T + 1) + a.shape[2:])], axis=1)  # noqa: E731
    # (b, h, t, ...) with zero steps past the sequence (dt = 0: no decay, no write) and one more
    x, dy = (pad(f(k).reshape(batch, T, H, P)).swapaxes(1, 2) for k in ("x", "dy"))
    B, C = (pad(f(k).reshape(batch, T, H, N)).swapaxes(1, 2) for k in ("B", "C"))
    dt, lam = (pad(f(k).reshape(batch, T, H)).swapaxes(1, 2) for k in ("dt", "lam"))
    theta = pad(f("theta").reshape(batch, T, H, N // 2)).swapaxes(1, 2)
    A = f("A").reshape(H)[None, :, None]
    skip = f("skip").reshape(H)[None, :, None, None]

    a = dt * A  # log alpha
    gam = lam * dt
    bn = (1.0 - lam) * dt
    out = {k: np.zeros((batch, H, Tp) + s) for k, s in
           (("dx", (P,)), ("dB", (N,)), ("dC", (N,)), ("ddt", ()), ("dlam", ()), ("dtheta", (N // 2,)))}
    dA = np.zeros((batch, H))
    dskip = (x * dy).sum((2, 3))

    # ---- chunk-local pass: rotated operands, decays and the two aggregates per chunk
    chunks = []
    for c in range(nc):
        sl = slice(c * L, c * L + L)
        cl = np.cumsum(a[:, :, sl], axis=-1)  # (b, h, L)
        Phi = np.cumsum(theta[:, :, sl], axis=2)  # (b, h, L, N/2)
        co, si = np.cos(Phi), np.sin(Phi)
        # Bg = R(-Phi) B: the transpose of R(Phi) on each pair
        Bg, Cr = (rot(M[:, :, sl, :, None], co, -si)[..., 0] for M in (B, C))
        bnn = bn[:, :, c * L + 1: c * L + L + 1]  # bn_{t+1}
        e = gam[:, :, sl] + bnn
        dec = np.exp(cl)
        decend = np.exp(cl[..., -1:] - cl)
        Agg = np.einsum("bht,bhtn,bhtp->bhnp", decend * e, Bg, x[:, :, sl])
        BAgg = np.einsum("bht,bhtn,bhtp->bhnp", dec, Cr, dy[:, :, sl])
        chunks.append(dict(sl=sl, cl=cl, co=co, si=si, Bg=Bg, Cr=Cr, bnn=bnn, e=e, dec=dec, decend=decend,
                           Agg=Agg, BAgg=BAgg))

    # ---- carries: Gin(c) forward, Gfut(c) = R(-Phi_end) dGin(c+1) backward
    Gin = [np.zeros((batch, H, N, P))]
    for k in chunks[:-1]:
        Gin.append(rot(k["dec"][..., -1, None, None] * Gin[-1] + k["Agg"], k["co"][:, :, -1], k["si"][:, :, -1]))
    Gfut = [None] * nc
    dGin_next = np.zeros((batch, H, N, P))
    for c in reversed(range(nc)):
        k = chunks[c]
        Gfut[c] = rot(dGin_next, k["co"][:, :, -1], -k["si"][:, :, -1])
        dGin_next = k["dec"][..., -1, None, None] * Gfut[c] + k["BAgg"]  # dGin(c)

    # ---- per chunk gradients
    tri = np.tril(np.ones((L, L), dtype=bool))
    for c, k in enumerate(chunks):
        sl, cl, Bg, Cr, e, bnn = k["sl"], k["cl"], k["Bg"], k["Cr"], k["e"], k["bnn"]
        xs, dys = x[:, :, sl], dy[:, :, sl]
        Dec = np.where(tri, np.exp(np.where(tri, cl[..., :, None] - cl[..., None, :], 0.0)), 0.0)
        Q = np.einsum("bhtn,bhsn->bhts", Cr, Bg)
        D = np.einsum("bhtp,bhsp->bhts", dys, xs)
        BC, xy = np.diagonal(Q, axis1=-2, axis2=-1), np.diagonal(D, axis1=-2, axis2=-1)
        E = np.where(np.eye(L, dtype=bool), gam[:, :, sl][..., None, :], e[..., None, :])  # e_ts
        dCr = np.einsum("bhts,bhsn->bhtn", Dec * E * D, Bg) + k["dec"][..., None] * np.einsum("bhtp,bhnp->bhtn", dys, Gin[c])
        Gx = np.einsum("bhst,bhsn->bhtn", Dec * D, Cr) + k["decend"][..., None] * np.einsum("bhtp,bhnp->bhtn", xs, Gfut[c])
        Xb = np.einsum("bhst,bhsp->bhtp", Dec * Q, dys) + k["decend"][..., None] * np.einsum("bhtn,bhnp->bhtp", Bg, Gfut[c])
        dBg = e[..., None] * Gx - (bnn * xy)[..., None] * Cr
        back = lambda M: rot(M[..., None], k["co"], k["si"])[..., 0]  # noqa: E731  R(Phi_t) per step
        out["dB"][:, :, sl] = back(dBg)
        out["dC"][:, :, sl] = back(dCr)
        out["dx"][:, :, sl] = e[..., None] * Xb + (skip - (bnn * BC)[..., None]) * dys
        dgam = (Bg * Gx).sum(-1)
        abeta = np.empty_like(dgam)
        abeta[..., 1:] = dgam[..., :-1] - BC[..., :-1] * xy[..., :-1]
        # the chunk's first step reads the previous step's write through dGin(c)
        dGin_c = k["dec"][..., -1, None, None] * Gfut[c] + k["BAgg"]
        t0 = c * L
        if t0 > 0:
            abeta[..., 0] = np.einsum("bhn,bhnp,bhp->bh", B[:, :, t0 - 1], dGin_c, x[:, :, t0 - 1])
        else:
            abeta[..., 0] = 0.0
        dcl = (Cr * dCr).sum(-1) - e * dgam + bnn * BC * xy
        dPhi = cross(dCr[..., None], Cr[..., None]) + cross(dBg[..., None], Bg[..., None])
        if c + 1 < nc:
            dGin_next = chunks[c + 1]["dec"][..., -1, None, None] * Gfut[c + 1] + chunks[c + 1]["BAgg"]
            dcl[..., -1] += (dGin_next * Gin[c + 1]).sum((-2, -1))
            dPhi[..., -1, :] += cross(Gin[c + 1], dGin_next)
        dloga = np.cumsum(dcl[..., ::-1], axis=-1)[..., ::-1]
        out["dtheta"][:, :, sl] = np.cumsum(dPhi[..., ::-1, :], axis=2)[..., ::-1, :]
        lm, d = lam[:, :, sl], dt[:, :, sl]
        out["ddt"][:, :, sl] = A * dloga + lm * dgam + (1.0 - lm) * abeta
        out["dlam"][:, :, sl] = d * (dgam - abeta)
        dA += (d * dloga).sum(-1)

    res = {k: v[:, :, :T].swapaxes(1, 2) for k, v in out.items()}
    res["dA"] = dA.sum(0)
    res["dskip"] = dskip.sum(0)
    return res


def main() -> int:
    ref = _load("mamba3_scan_backward_reference", ROOT / "challenges/mamba3_scan_backward/reference.py")
    import tomllib

    cfg = tomllib.loads((ROOT / "challenges/mamba3_scan_backward/challenge.toml").read_text())
    worst = 0.0
    for case in [*cfg["tests"]["functional"], {"name": "several_chunks_wide", "distribution": "long_memory", "seed": 99,
                 "sizes": dict(batch=2, seq_len=300, n_heads=2, head_dim=12, d_state=20)}]:
        sizes = case["sizes"]
        inputs = ref.generate_inputs(case["distribution"], sizes, np.random.default_rng(case["seed"]))
        for name in case.get("zero", []):
            inputs[name] = np.zeros_like(inputs[name])
        inputs = {k: v.astype(np.float64) for k, v in inputs.items()}
        want = ref.reference(inputs, sizes)
        errs = {}
        for chunk in (CHUNK, 16):  # the kernel's chunk length, and a short one: many chunk boundaries
            got = backward_chunked(inputs, sizes, chunk)
            for k in want:
                err = float(np.abs(got[k].reshape(want[k].shape) - want[k]).max() / max(1.0, np.abs(want[k]).max()))
                errs[k] = max(errs.get(k, 0.0), err)
        name, err = max(errs.items(), key=lambda kv: kv[1])
        worst = max(worst, err)
        print(f"{case['name']:28s} worst relative error {err:.1e} ({name})")
    print(f"all tests: worst {worst:.1e}")
    return 0 if worst < 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main())
