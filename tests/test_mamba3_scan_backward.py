"""mamba3_scan_backward: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The oracle is checked three ways: against central finite differences
of the FORWARD challenge's oracle along random directions, against complex-step
derivatives of an independent forward loop (every gradient element, exact to
rounding), and against the folded algebra the fast kernels use, run in float64.
The float32 emulations stand in for GPU solutions: they decide whether the
per-output tolerances accept correct float32 work in any reasonable order and
reject a half-precision state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

FORWARD_INPUTS = ("x", "B", "C", "dt", "A", "lam", "theta", "skip")
INPUTS = (*FORWARD_INPUTS, "dy")
OUTPUTS = tuple(f"d{name}" for name in FORWARD_INPUTS)
SIZES = ("batch", "seq_len", "n_heads", "head_dim", "d_state")
F32 = np.float32

CASES = ChallengeCases("mamba3_scan_backward")
CH = CASES.challenge
REF = CH.reference_module
FORWARD = ChallengeCases("mamba3_scan").challenge.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
shape_of, case_inputs = CASES.shape_of, CASES.case_inputs

_expected: dict[str, dict[str, np.ndarray]] = {}


def case_reference(case: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Every float64 gradient of a test entry, computed once."""
    if case["name"] not in _expected:
        inputs = {k: v.astype(np.float64) for k, v in case_inputs(case).items()}
        _expected[case["name"]] = REF.reference(inputs, case["sizes"])
    return _expected[case["name"]]


def worst_ratios(outs: Mapping[str, np.ndarray], refs: Mapping[str, np.ndarray], scale: float = 1.0) -> dict[str, float]:
    """Per output, max |out - ref| / (atol + rtol*|ref|) with that output's tolerance
    (both scaled by `scale`), by the harness's own comparison: <= 1 passes."""
    ratios = {}
    for name in OUTPUTS:
        tol = CH.tolerance_for(name)
        ratios[name] = CASES.worst_ratio(outs[name], refs[name], atol=scale * tol.atol, rtol=scale * tol.rtol)
    return ratios


def unpack(inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], dtype: type) -> list[np.ndarray]:
    """The inputs in signature order, reshaped to their challenge shapes, in `dtype`."""
    return [np.asarray(inputs[k], dtype=dtype).reshape(shape_of(k, sizes)) for k in INPUTS]


# ---------------------------------------------------------------------------
# float32 emulations of GPU solutions (vectorised over b, h, n, p; loops over t)

Fn = Callable[[np.ndarray], np.ndarray]
LOG2E = F32(1.4426950408889634)
INV_2PI = F32(1.0 / (2.0 * np.pi))


def correctly_rounded(f: Callable[[np.ndarray], np.ndarray]) -> Fn:
    """f to within 0.5 ulp in float32, as the CPU emulator's libm gives it."""
    return lambda x: f(x.astype(np.float64)).astype(F32)


def shift_ulps(r: np.ndarray, sign: int) -> np.ndarray:
    """Move r by -1..+2 ulp (sign=+1) or +1..-2 ulp (sign=-1), picked by hashing r:
    up to 2 ulp, 0.5 ulp mean bias. Zeros and subnormals are left alone."""
    bits = r.view(np.uint32)
    k = ((bits * np.uint32(2654435761)) >> np.uint32(30)).astype(np.int32)  # 0..3
    shifted = (r.view(np.int32) + (k - 1) * sign).view(F32)
    return np.where(np.abs(r) >= np.finfo(F32).tiny, shifted, r)


def exp_fast(sign: int) -> Fn:
    """A fast-math __expf stand-in: x*log2(e) rounded to float32 first, then a biased
    error of up to 2 ulp."""
    return lambda x: shift_ulps(np.exp2((x * LOG2E).astype(np.float64)).astype(F32), sign)


def trig_fast(f: Callable[[np.ndarray], np.ndarray], sign: int) -> Fn:
    """A fast-math __sinf/__cosf stand-in: the angle turned into revolutions in float32
    (the hardware's argument reduction), then a biased error of up to 2 ulp."""
    return lambda x: shift_ulps(f(2.0 * np.pi * (x * INV_2PI).astype(F32).astype(np.float64)).astype(F32), sign)


EXACT = (correctly_rounded(np.exp), correctly_rounded(np.cos), correctly_rounded(np.sin))
FAST_UP = (exp_fast(+1), trig_fast(np.cos, +1), trig_fast(np.sin, +1))
FAST_DOWN = (exp_fast(-1), trig_fast(np.cos, -1), trig_fast(np.sin, -1))


def pairs_rotate(M: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """R M for M as row pairs (..., N/2, 2, P); pass -s for R^T M."""
    c, s = c[..., None], s[..., None]
    return np.stack([c * M[..., 0, :] - s * M[..., 1, :], s * M[..., 0, :] + c * M[..., 1, :]], axis=-2)


def backward_emulated(
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int],
    functions: tuple[Fn, Fn, Fn] = EXACT,
    dtype: type = F32,
    state_dtype: type | None = None,
    algebra: str = "direct",
    time_chunk: int | None = None,
    checkpoint: int = 64,
) -> dict[str, np.ndarray]:
    """The reverse sweep in `dtype` (float32 for the emulations, float64 to test the algebra).

    algebra "direct" is the oracle's lines; "folded" is the fast kernels' form
    (spec.md, "The folded form"): five column/row sums of products with W_{t+1}
    and h_t, the adjoint update with alpha_{t+1} folded into the rotation, and
    dB, dtheta, dgamma, dbeta assembled from those sums. state_dtype (e.g.
    float16) rounds h and W after every step. dA and dskip are summed over
    (b, t) by one running sum (time_chunk None), or in partial sums of
    time_chunk steps added at the end, as a kernel split over time would.
    """
    expf, cosf, sinf = functions
    batch, L, H, P, N = (sizes[k] for k in SIZES)
    x, B, C, dt, A, lam, theta, skip, dy = unpack(inputs, sizes, dtype)
    B, C = B.reshape(batch, L, H, N // 2, 2), C.reshape(batch, L, H, N // 2, 2)
    one = dtype(1)
    alpha = expf(dt * A)
    beta = (one - lam) * dt * alpha
    gamma = lam * dt
    cos, sin = cosf(theta), sinf(theta)
    sc = lambda a, t: a[:, t, :, None, None, None]  # noqa: E731
    store = (lambda m: m.astype(state_dtype).astype(dtype)) if state_dtype else (lambda m: m)
    zeros = np.zeros((batch, H, N // 2, 2, P), dtype=dtype)

    def write(t: int) -> np.ndarray:
        return zeros if t < 0 else B[:, t, :, :, :, None] * x[:, t, :, None, None, :]

    def step(h: np.ndarray, t: int) -> np.ndarray:
        v = sc(alpha, t) * h + sc(beta, t) * write(t - 1)
        return store(pairs_rotate(v, cos[:, t], sin[:, t]) + sc(gamma, t) * write(t))

    checkpoints, h = {}, zeros
    for t in range(L):
        if t % checkpoint == 0:
            checkpoints[t] = h
        h = step(h, t)

    out = {
        "dx": np.empty((batch, L, H, P), dtype),
        "dB": np.empty((batch, L, H, N // 2, 2), dtype),
        "dC": np.empty((batch, L, H, N // 2, 2), dtype),
        "dtheta": np.empty((batch, L, H, N // 2), dtype),
    }
    dalpha, dbeta, dgamma = (np.zeros((batch, L, H), dtype) for _ in range(3))
    W_next = zeros
    for t0 in reversed(range(0, L, checkpoint)):
        states = [checkpoints[t0]]
        for t in range(t0, min(t0 + checkpoint, L)):
            states.append(step(states[-1], t))
        for t in reversed(range(t0, min(t0 + checkpoint, L))):
            h_t, h_prev = states[t - t0 + 1], states[t - t0]
            # W_L = 0: nothing flows back from past the last step
            a_next = sc(alpha, t + 1) if t + 1 < L else np.zeros_like(sc(alpha, t))
            b_next = sc(beta, t + 1) if t + 1 < L else np.zeros_like(sc(beta, t))
            g = sc(gamma, t)
            x_t, dy_t = x[:, t, :, None, None, :], dy[:, t, :, None, None, :]
            C_t, B_t = C[:, t, :, :, :, None], B[:, t, :, :, :, None]
            if algebra == "direct":
                G = C_t * dy_t + a_next * W_next
                W = pairs_rotate(G, cos[:, t], -sin[:, t])
                out["dC"][:, t] = (h_t * dy_t).sum(-1)
                dS = g * G + b_next * W_next
                out["dB"][:, t] = (dS * x_t).sum(-1)
                out["dx"][:, t] = (dS * B_t).sum((-3, -2)) + skip[None, :, None] * dy[:, t]
                dalpha[:, t] = (W * h_prev).sum((-3, -2, -1))
                dbeta[:, t] = (W * write(t - 1)).sum((-3, -2, -1))
                dgamma[:, t] = (G * write(t)).sum((-3, -2, -1))
                u = h_t - g * write(t)
                out["dtheta"][:, t] = (G[..., 1, :] * u[..., 0, :] - G[..., 0, :] * u[..., 1, :]).sum(-1)
            else:
                # the five sums over products with W_{t+1} and h_t, then the adjoint update
                Q = (W_next * x_t).sum(-1)  # (b, h, N/2, 2)
                X = (W_next * B_t).sum((-3, -2))  # (b, h, P)
                dCt = (h_t * dy_t).sum(-1)
                CR = (W_next[..., 1, :] * h_t[..., 0, :] - W_next[..., 0, :] * h_t[..., 1, :]).sum(-1)
                rotC = pairs_rotate(C_t, cos[:, t], -sin[:, t])  # R_t^T C_t, once per (t, pair)
                W = a_next * pairs_rotate(W_next, cos[:, t], -sin[:, t]) + rotC * dy_t
                dalpha[:, t] = (W * h_prev).sum((-3, -2, -1))
                xy = (x[:, t] * dy[:, t]).sum(-1)[:, :, None, None]
                BC = (B[:, t] * C[:, t]).sum((-2, -1))
                k = (g * a_next + b_next)[..., 0]  # (b, h, 1, 1)
                Ct, Bt = C[:, t], B[:, t]
                out["dC"][:, t] = dCt
                out["dB"][:, t] = k * Q + g[..., 0] * Ct * xy
                out["dx"][:, t] = k[..., 0] * X + (gamma[:, t, :, None] * BC[..., None] + skip[None, :, None]) * dy[:, t]
                GX = a_next[..., 0] * Q + Ct * xy  # sum_p G_t x_t, per row
                out["dtheta"][:, t] = (
                    (a_next[..., 0, 0] * CR)
                    + (Ct[..., 1] * dCt[..., 0] - Ct[..., 0] * dCt[..., 1])
                    - g[..., 0, 0] * (Bt[..., 0] * GX[..., 1] - Bt[..., 1] * GX[..., 0])
                )
                BQ = (Bt * Q).sum((-2, -1))  # = dbeta_{t+1}
                if t + 1 < L:  # dbeta_0 stays 0: S_{-1} = 0
                    dbeta[:, t + 1] = BQ
                dgamma[:, t] = a_next[..., 0, 0, 0] * BQ + BC * xy[..., 0, 0]
            W_next = store(W)
    ddt = A * alpha * dalpha + (one - lam) * (one + dt * A) * alpha * dbeta + lam * dgamma
    dlam = dt * (dgamma - alpha * dbeta)
    terms_A = dt * alpha * (dalpha + (one - lam) * dt * dbeta)  # (b, t, h)
    terms_skip = (x * dy).sum(-1)  # (b, t, h), summed over p first as every kernel does
    step_len = time_chunk or L
    dA, dskip = np.zeros(H, dtype), np.zeros(H, dtype)
    for b in range(batch):
        for s in range(0, L, step_len):
            partA, partS = np.zeros(H, dtype), np.zeros(H, dtype)
            for t in range(s, min(s + step_len, L)):  # a running sum, as one thread keeps it
                partA += terms_A[b, t]
                partS += terms_skip[b, t]
            dA += partA
            dskip += partS
    return {
        "dx": out["dx"],
        "dB": out["dB"].reshape(batch, L, H, N),
        "dC": out["dC"].reshape(batch, L, H, N),
        "ddt": ddt,
        "dA": dA,
        "dlam": dlam,
        "dtheta": out["dtheta"],
        "dskip": dskip,
    }


# ---------------------------------------------------------------------------
# the oracle


def test_reference_reproduces_the_worked_example() -> None:
    example = CFG["tests"]["example"]
    inputs = {k: np.asarray(v, dtype=F32) for k, v in example["inputs"].items()}
    assert set(inputs) == set(INPUTS)
    for name, value in inputs.items():
        assert value.shape == shape_of(name, example["sizes"]), name
    grads = REF.reference(inputs, example["sizes"])
    assert set(grads) == set(OUTPUTS)
    for name in OUTPUTS:
        assert grads[name].dtype == np.float64
        expected = np.asarray(example["expected"][name])
        # the float32 rounding of -ln 2 and pi/2 is all that separates the two
        np.testing.assert_allclose(grads[name], expected, rtol=0, atol=1e-6, err_msg=name)


def loss(forward_inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], dy: np.ndarray) -> float:
    """sum(dy * y) with y from the FORWARD challenge's oracle."""
    return float((FORWARD.reference(forward_inputs, sizes)["y"] * dy).sum())


FD_SIZES = dict(batch=2, seq_len=37, n_heads=3, head_dim=5, d_state=6)


@pytest.mark.parametrize("distribution", list(REF.DISTRIBUTIONS))
def test_reference_matches_finite_differences_of_the_forward_oracle(distribution: str) -> None:
    """Along a random direction in each input: Richardson-extrapolated central differences
    (error O(eps^4)) of the forward oracle agree with <gradient, direction> to 1e-6
    relative (measured: 1e-8 or better; large_angles turns theta through many turns)."""
    rng = np.random.default_rng(11)
    inputs = REF.generate_inputs(distribution, FD_SIZES, rng)
    grads = REF.reference(inputs, FD_SIZES)
    base = {k: inputs[k].astype(np.float64) for k in FORWARD_INPUTS}
    dy = inputs["dy"].astype(np.float64)
    for name in FORWARD_INPUTS:
        direction = rng.standard_normal(base[name].shape)

        def central(eps: float) -> float:
            plus, minus = dict(base), dict(base)
            plus[name] = base[name] + eps * direction
            minus[name] = base[name] - eps * direction
            return (loss(plus, FD_SIZES, dy) - loss(minus, FD_SIZES, dy)) / (2 * eps)

        eps = 1e-3
        numeric = (4 * central(eps / 2) - central(eps)) / 3
        analytic = float((grads[f"d{name}"] * direction).sum())
        assert abs(numeric - analytic) <= 1e-6 * abs(analytic), (name, numeric, analytic)


def forward_loop(v: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> np.ndarray:
    """y by the spec's four lines written as loops over (b, h, t, i), in whatever dtype
    the inputs have (complex for the complex step). Vectorised only over p and over a
    leading axis of perturbation directions. Shares no code with either oracle."""
    batch, L, H, P, N = (sizes[k] for k in SIZES)
    dirs = v["x"].shape[0]
    y = np.zeros((dirs, batch, L, H, P), dtype=v["x"].dtype)
    for b in range(batch):
        for h in range(H):
            state = np.zeros((dirs, N, P), dtype=v["x"].dtype)
            prev_write = np.zeros((dirs, N, P), dtype=v["x"].dtype)
            for t in range(L):
                a = np.exp(v["dt"][:, b, t, h] * v["A"][:, h])[:, None]
                be = (1 - v["lam"][:, b, t, h]) * v["dt"][:, b, t, h] * a[:, 0]
                ga = v["lam"][:, b, t, h] * v["dt"][:, b, t, h]
                write = v["B"][:, b, t, h, :, None] * v["x"][:, b, t, h, None, :]
                new = np.empty_like(state)
                for i in range(N // 2):
                    r0 = a * state[:, 2 * i] + be[:, None] * prev_write[:, 2 * i]
                    r1 = a * state[:, 2 * i + 1] + be[:, None] * prev_write[:, 2 * i + 1]
                    c = np.cos(v["theta"][:, b, t, h, i])[:, None]
                    s = np.sin(v["theta"][:, b, t, h, i])[:, None]
                    new[:, 2 * i] = c * r0 - s * r1 + ga[:, None] * write[:, 2 * i]
                    new[:, 2 * i + 1] = s * r0 + c * r1 + ga[:, None] * write[:, 2 * i + 1]
                state, prev_write = new, write
                y[:, b, t, h] = (v["C"][:, b, t, h, :, None] * state).sum(1) + v["skip"][:, h, None] * v["x"][:, b, t, h]
    return y


@pytest.mark.parametrize("distribution", ["moderate", "large_angles", "fast_decay", "lam_one"])
def test_reference_matches_complex_step_derivatives_of_an_independent_loop(distribution: str) -> None:
    """Every element of every gradient: perturbing input element k by i*1e-30 makes
    Im(sum(dy * y))/1e-30 its exact derivative (no cancellation, so no step-size error).
    One direction per input element, all run at once along the leading axis."""
    sizes = dict(batch=2, seq_len=9, n_heads=2, head_dim=3, d_state=4)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(4))
    grads = REF.reference(inputs, sizes)
    dy = inputs["dy"].astype(np.float64)
    base = {k: inputs[k].astype(np.complex128).reshape(shape_of(k, sizes)) for k in FORWARD_INPUTS}
    step = 1e-30
    for name in FORWARD_INPUTS:
        count = base[name].size
        batched = {k: np.broadcast_to(v, (count, *v.shape)).copy() for k, v in base.items()}
        batched[name].reshape(count, count)[np.arange(count), np.arange(count)] += 1j * step
        y = forward_loop(batched, sizes)
        derivative = (y.imag / step * dy[None]).sum(axis=tuple(range(1, y.ndim)))
        np.testing.assert_allclose(grads[f"d{name}"].ravel(), derivative, rtol=1e-10, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("distribution", list(REF.DISTRIBUTIONS))
def test_folded_algebra_of_the_kernels_equals_the_oracle_in_float64(distribution: str) -> None:
    """The fast kernels assemble dB, dtheta, dgamma and dbeta from five sums (spec.md,
    "The folded form"); in float64 that algebra must reproduce the oracle to rounding."""
    sizes = dict(batch=2, seq_len=70, n_heads=2, head_dim=5, d_state=6)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(8))
    grads = REF.reference(inputs, sizes)
    exact = (np.exp, np.cos, np.sin)
    for checkpoint in (64, 16):
        folded = backward_emulated(inputs, sizes, exact, np.float64, algebra="folded", checkpoint=checkpoint)
        for name in OUTPUTS:
            scale = max(np.abs(grads[name]).max(), 1.0)
            np.testing.assert_allclose(folded[name], grads[name], rtol=0, atol=1e-11 * scale, err_msg=name)


def test_reference_runs_at_sizes_past_one_checkpoint_block() -> None:
    """seq_len 150 crosses two checkpoint blocks (64) with a ragged last one: recomputed
    states must equal a single sweep's, so the direct emulation in float64 with its own
    checkpoint length (16, 150) agrees with the oracle to rounding."""
    sizes = dict(batch=1, seq_len=150, n_heads=2, head_dim=3, d_state=4)
    inputs = REF.generate_inputs("long_memory", sizes, np.random.default_rng(9))
    grads = REF.reference(inputs, sizes)
    for checkpoint in (16, 150):
        direct = backward_emulated(inputs, sizes, (np.exp, np.cos, np.sin), np.float64, checkpoint=checkpoint)
        for name in OUTPUTS:
            np.testing.assert_allclose(direct[name], grads[name], rtol=1e-12, atol=1e-12, err_msg=name)


# ---------------------------------------------------------------------------
# generators and metadata


GEN_SIZES = [
    dict(batch=1, seq_len=1, n_heads=1, head_dim=1, d_state=2),
    dict(batch=3, seq_len=17, n_heads=5, head_dim=7, d_state=128),
]


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", GEN_SIZES, ids=lambda s: "x".join(str(s[k]) for k in SIZES))
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_inputs_are_the_forward_inputs_plus_dy() -> None:
    """Same seed, same forward inputs: a gradient check can run the forward challenge on them."""
    sizes = GEN_SIZES[1]
    for distribution in CFG["distributions"]:
        ours = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
        theirs = FORWARD.generate_inputs(distribution, sizes, np.random.default_rng(5))
        assert set(ours) == {*theirs, "dy"}
        for name in theirs:
            np.testing.assert_array_equal(ours[name], theirs[name])
        assert ours["dy"].shape == shape_of("dy", sizes) and ours["dy"].std() > 0.5


def test_metadata_is_consistent() -> None:
    names = [p["name"] for p in CFG["params"]]
    assert names == [*INPUTS, *OUTPUTS, *SIZES]  # the solve() signature order
    assert CH.signature() == (
        'extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, '
        "const float* A, const float* lam, const float* theta, const float* skip, const float* dy, "
        "float* dx, float* dB, float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip, "
        "int batch, int seq_len, int n_heads, int head_dim, int d_state)"
    )
    forward = ChallengeCases("mamba3_scan").challenge
    for p in forward.inputs:  # each gradient has its input's shape
        assert PARAMS[f"d{p.name}"]["shape"] == list(p.shape), p.name
    assert [p.name for p in forward.size_params] == list(SIZES)
    for p in forward.size_params:
        assert (PARAMS[p.name]["min"], PARAMS[p.name]["max"]) == (p.min, p.max)
    assert PERFORMANCE["sizes"] == forward.test("official").sizes  # the forward's official size
    cases = [*FUNCTIONAL, PERFORMANCE, CFG["tests"]["example"]]
    for case in cases:
        assert set(case["sizes"]) == set(SIZES)
        assert case["sizes"]["d_state"] % 2 == 0
        for size, value in case["sizes"].items():
            assert PARAMS[size]["min"] <= value <= PARAMS[size]["max"], (case.get("name"), size)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    for k in SIZES:
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert any(s["seq_len"] >= 4096 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert {z for c in FUNCTIONAL for z in c.get("zero", [])} >= {"lam", "x", "theta", "skip", "B", "dy"}


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    steps = 2 * 4096 * 16
    # read x, dy, B, C, theta, dt, lam; write dx, dB, dC, dtheta, ddt, dlam
    assert CH.cost_of("bytes", sizes) == 4 * (steps * (3 * 64 + 5 * 64 + 4) + 4 * 16) == 270_532_864
    assert CH.cost_of("transcendentals", sizes) == steps * (1 + 2 * 32)
    assert CH.cost_of("flops", sizes) == 22 * steps * 64 * 64


def test_zero_dy_gives_zero_gradients() -> None:
    case = next(c for c in FUNCTIONAL if c["name"] == "zero_dy_all_gradients_zero")
    for name, value in case_reference(case).items():
        assert not value.any(), name


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

CORRECT_FLOAT32 = {
    "direct_libm_one_running_sum": dict(functions=EXACT, algebra="direct"),
    "folded_libm_sums_per_128_steps": dict(functions=EXACT, algebra="folded", time_chunk=128),
    "folded_fast_bias_up": dict(functions=FAST_UP, algebra="folded", time_chunk=128),
    "direct_fast_bias_down": dict(functions=FAST_DOWN, algebra="direct"),
}
LONG_MEMORY = [c for c in FUNCTIONAL if c["distribution"] == "long_memory"]


@pytest.mark.parametrize("impl", list(CORRECT_FLOAT32))
def test_float32_backward_passes_every_functional_test_with_margin(impl: str) -> None:
    for case in FUNCTIONAL:
        out = backward_emulated(case_inputs(case), case["sizes"], **CORRECT_FLOAT32[impl])
        ratios = worst_ratios(out, case_reference(case))
        # pass is <= 1; demand half of that so that a correct solution never sits near the edge
        assert max(ratios.values()) <= 0.5, (case["name"], ratios)


@pytest.mark.parametrize("case", LONG_MEMORY, ids=[c["name"] for c in LONG_MEMORY])
def test_half_precision_state_fails_long_memory(case: dict[str, Any]) -> None:
    out = backward_emulated(case_inputs(case), case["sizes"], EXACT, state_dtype=np.float16)
    assert max(worst_ratios(out, case_reference(case)).values()) >= 5.0


def test_tolerance_is_not_loose_enough_to_pass_a_half_precision_state_or_tight_enough_to_fail_fast_math() -> None:
    """On long_memory_longest: with every atol and rtol ten times looser the half-precision
    state still fails every output but dA and dskip (measured 1.16 .. 2.16; dA 0.03, the
    one output whose margin is 4.4, not 12+); ten times tighter, the biased fast functions
    fail every output but dskip (measured 1.18 .. 2.43), which is why the bounds are not lower."""
    case = next(c for c in LONG_MEMORY if c["name"] == "long_memory_longest")
    inputs, ref = case_inputs(case), case_reference(case)
    half = worst_ratios(backward_emulated(inputs, case["sizes"], EXACT, state_dtype=np.float16), ref, scale=10)
    assert all(half[name] > 1.1 for name in ("dx", "dB", "dC", "ddt", "dlam", "dtheta")), half
    fast = backward_emulated(inputs, case["sizes"], FAST_UP, algebra="folded", time_chunk=128)
    tight = worst_ratios(fast, ref, scale=0.1)
    assert all(tight[name] > 1.1 for name in OUTPUTS if name != "dskip"), tight
