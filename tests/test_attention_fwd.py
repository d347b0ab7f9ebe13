"""attention_fwd: the oracle, the generators, the metadata and the tolerance policy.

CPU only. The challenge folder is read directly (challenge.toml with tomllib,
reference.py by path); test inputs are drawn the way harness.testdata draws
them (generator seeded [seed, 0], then the `zero` inputs cleared). The NumPy
emulations stand in for GPU kernels: FlashAttention-2 arithmetic (float32
scores, online softmax, P rounded to float16, float16 output) must pass with
margin; no max shift, a missing mask and the wrong scale must fail.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1] / "challenges" / "attention_fwd"
CFG: dict[str, Any] = tomllib.loads((ROOT / "challenge.toml").read_text())
_spec = importlib.util.spec_from_file_location("attention_fwd_reference", ROOT / "reference.py")
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
ATOL, RTOL = CFG["tolerance"]["atol"], CFG["tolerance"]["rtol"]
SIZES = ("batch", "heads", "seq_len", "head_dim")
F16, F32 = np.float16, np.float32
LOG2E = 1.4426950408889634


def case_inputs(case: dict[str, Any]) -> dict[str, np.ndarray]:
    inputs = REF.generate_inputs(case["distribution"], case["sizes"], np.random.default_rng([case["seed"], 0]))
    for name in case.get("zero", []):
        inputs[name][...] = 0
    return inputs


def worst_ratio(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / (atol + rtol*|ref|): <= 1 passes; NaN or inf counts as inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.abs(out.astype(np.float64) - ref) / (ATOL + RTOL * np.abs(ref))
    return math.inf if not np.isfinite(ratio).all() else float(ratio.max(initial=0.0))


# ---------------------------------------------------------------------------
# emulations of GPU kernels, one (batch, head) at a time


def flash_attention_2(q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int = 64, shift: bool = True,
                      causal: bool = True, scale: float | None = None) -> np.ndarray:
    """float32 scores of float16 inputs, online softmax in the exp2 domain over
    key blocks, P rounded to float16 for the P V product, float32 accumulators,
    float16 output. shift=False drops the max shift, causal=False the mask."""
    n, d = q.shape
    scale_log2 = F32(LOG2E * (1 / math.sqrt(d) if scale is None else scale))
    q32, k32, v32 = q.astype(F32), k.astype(F32), v.astype(F32)
    m = np.full(n, -np.inf, F32)
    l = np.zeros(n, F32)
    acc = np.zeros((n, d), F32)
    rows = np.arange(n)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        for n0 in range(0, n, block):
            s = q32 @ k32[n0:n0 + block].T
            if causal:
                s = np.where(np.arange(n0, min(n0 + block, n))[None, :] > rows, -np.inf, s)
            m_new = np.maximum(m, s.max(axis=1) * scale_log2) if shift else np.zeros(n, F32)
            m_use = np.where(np.isinf(m_new), 0, m_new).astype(F32)
            correction = np.exp2(m - m_use).astype(F32) if shift else np.ones(n, F32)
            p = np.exp2((s * scale_log2 - m_use[:, None]).astype(F32)).astype(F32)
            m = m_new
            l = l * correction + p.sum(axis=1)
            acc = acc * correction[:, None] + p.astype(F16).astype(F32) @ v32[n0:n0 + block]
        return (acc / l[:, None]).astype(F16)


def per_head(fn, inputs: dict[str, np.ndarray]) -> np.ndarray:
    Q, K, V = (inputs[n] for n in "QKV")
    out = np.empty(Q.shape, F16)
    for b in range(Q.shape[0]):
        for h in range(Q.shape[1]):
            out[b, h] = fn(Q[b, h], K[b, h], V[b, h])
    return out


# ---------------------------------------------------------------------------
# the oracle


def slow_loop(inputs: dict[str, np.ndarray], sizes: dict[str, int]) -> np.ndarray:
    """Scalar Python transcription of spec.md's three lines."""
    Q, K, V = (inputs[n].astype(np.float64) for n in "QKV")
    out = np.zeros(Q.shape)
    d = sizes["head_dim"]
    for b in range(sizes["batch"]):
        for h in range(sizes["heads"]):
            for i in range(sizes["seq_len"]):
                s = [sum(Q[b, h, i, x] * K[b, h, j, x] for x in range(d)) / math.sqrt(d) for j in range(i + 1)]
                top = max(s)
                p = [math.exp(x - top) for x in s]
                for x in range(d):
                    out[b, h, i, x] = sum(p[j] * V[b, h, j, x] for j in range(i + 1)) / sum(p)
    return out


@pytest.mark.parametrize("distribution", REF.DISTRIBUTIONS)
def test_reference_matches_scalar_loop(distribution: str) -> None:
    sizes = dict(batch=2, heads=1, seq_len=6, head_dim=64)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    np.testing.assert_allclose(REF.reference(inputs, sizes)["O"], slow_loop(inputs, sizes), rtol=1e-12, atol=1e-12)


def test_reference_query_blocks_agree_with_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = dict(batch=1, heads=2, seq_len=300, head_dim=64)
    inputs = REF.generate_inputs("large_logits", sizes, np.random.default_rng(6))
    blocked = REF.reference(inputs, sizes)["O"]
    monkeypatch.setattr(REF, "QUERY_BLOCK", 7)
    np.testing.assert_allclose(REF.reference(inputs, sizes)["O"], blocked, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
def test_generate_inputs_respects_contract(distribution: str) -> None:
    sizes = dict(batch=2, heads=3, seq_len=5, head_dim=128)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    assert set(inputs) == {"Q", "K", "V"}
    for value in inputs.values():
        assert value.dtype == F16 and value.shape == (2, 3, 5, 128) and value.flags.c_contiguous
        assert np.isfinite(value).all()
    again = REF.generate_inputs(distribution, sizes, np.random.default_rng(7))
    for name in inputs:
        np.testing.assert_array_equal(inputs[name], again[name])


def test_equal_keys_give_prefix_means() -> None:
    sizes = dict(batch=1, heads=1, seq_len=9, head_dim=64)
    inputs = REF.generate_inputs("equal_keys", sizes, np.random.default_rng(8))
    V = inputs["V"][0, 0].astype(np.float64)
    expected = np.cumsum(V, axis=0) / np.arange(1, 10)[:, None]
    np.testing.assert_allclose(REF.reference(inputs, sizes)["O"][0, 0], expected, rtol=1e-12, atol=1e-12)


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(batch=1, heads=1, seq_len=1, head_dim=64), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["Q", "K", "V", "O", *SIZES]
    assert all(p["dtype"] == "float16" for p in CFG["params"][:4])
    assert set(CFG["distributions"]) == set(REF.DISTRIBUTIONS)
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    for case in cases:
        s = case["sizes"]
        assert set(s) == set(SIZES), case["name"]
        for size, value in s.items():
            assert PARAMS[size]["min"] <= value <= PARAMS[size]["max"], (case["name"], size)
        assert s["head_dim"] in (64, 128) and s["batch"] * s["heads"] * s["seq_len"] * s["head_dim"] <= 2**28
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {s["head_dim"] for s in sizes} == {64, 128}
    assert any(s["seq_len"] == 1 for s in sizes)
    assert any(s["seq_len"] % 64 for s in sizes) and any(s["seq_len"] % 128 == 1 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert PERFORMANCE["sizes"] == dict(batch=4, heads=16, seq_len=4096, head_dim=128)


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    cost = {k: eval(v, {}, dict(sizes)) for k, v in CFG["cost"].items()}  # noqa: S307 (our own file)
    assert cost["bytes"] == 268_435_456  # 67.1 MB per array
    assert cost["flops"] == 274_945_015_808  # 275.0 GFLOP, as in spec.md


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

CORRECT = {"fa2_block64": lambda q, k, v: flash_attention_2(q, k, v, 64),
           "fa2_block128": lambda q, k, v: flash_attention_2(q, k, v, 128)}


@pytest.mark.parametrize("name", list(CORRECT))
def test_flash_attention_arithmetic_passes_every_functional_test_with_margin(name: str) -> None:
    for case in FUNCTIONAL:
        inputs = case_inputs(case)
        ref = REF.reference(inputs, case["sizes"])["O"]
        assert worst_ratio(per_head(CORRECT[name], inputs), ref) <= 0.5, case["name"]


WRONG = {
    "no_max_shift": (lambda q, k, v: flash_attention_2(q, k, v, shift=False), "large_logits"),
    "not_causal": (lambda q, k, v: flash_attention_2(q, k, v, causal=False), "not_a_multiple_of_tiles"),
    "scale_1_over_d": (lambda q, k, v: flash_attention_2(q, k, v, scale=1 / q.shape[1]), "offset_values"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_typical_mistakes_fail(name: str) -> None:
    fn, case_name = WRONG[name]
    case = next(c for c in FUNCTIONAL if c["name"] == case_name)
    inputs = case_inputs(case)
    assert worst_ratio(per_head(fn, inputs), REF.reference(inputs, case["sizes"])["O"]) > 10
