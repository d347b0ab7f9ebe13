"""linear_recurrence: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The float32
emulations stand in for GPU solutions: one thread per row in order, and
chunked scans (chunk maps composed in float32, carried across chunks), as
parallel solutions evaluate it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("linear_recurrence")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio


def sequential_float32(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    h = np.zeros(a.shape[0], F32)
    out = np.empty(a.shape, F32)
    for t in range(a.shape[1]):
        h = a[:, t] * h + x[:, t]
        out[:, t] = h
    return out


def chunked_float32(a: np.ndarray, x: np.ndarray, chunk: int) -> np.ndarray:
    """Per chunk from h = 0 with the running product of a, chunk end states
    chained in order, then local + product * carry: all in float32."""
    batch, n = a.shape
    chunks = -(-n // chunk)
    pad = ((0, 0), (0, chunks * chunk - n))
    a3 = np.pad(a, pad, constant_values=1).reshape(batch, chunks, chunk)
    x3 = np.pad(x, pad).reshape(batch, chunks, chunk)
    local, decay = np.empty_like(x3), np.empty_like(a3)
    h, p = np.zeros((batch, chunks), F32), np.ones((batch, chunks), F32)
    for t in range(chunk):
        h = a3[:, :, t] * h + x3[:, :, t]
        p = p * a3[:, :, t]
        local[:, :, t], decay[:, :, t] = h, p
    carry = np.zeros((batch, chunks), F32)
    for c in range(1, chunks):
        carry[:, c] = decay[:, c - 1, -1] * carry[:, c - 1] + local[:, c - 1, -1]
    return (local + decay * carry[:, :, None]).reshape(batch, -1)[:, :n]


def slow_loop(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the chunked reference."""
    out = np.zeros(a.shape)
    for b in range(a.shape[0]):
        h = 0.0
        for t in range(a.shape[1]):
            h = float(a[b, t]) * h + float(x[b, t])
            out[b, t] = h
    return out


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("batch, seq_len", [(1, 1), (3, 2), (2, 1023), (2, 1025), (1, 3000)])
def test_reference_matches_scalar_loop(distribution: str, batch: int, seq_len: int) -> None:
    sizes = dict(batch=batch, seq_len=seq_len)
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(3))
    h = REF.reference(inputs, sizes)["h"]
    assert h.shape == (batch, seq_len) and h.dtype == np.float64
    np.testing.assert_allclose(h, slow_loop(inputs["a"], inputs["x"]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize("sizes", [dict(batch=1, seq_len=1), dict(batch=3, seq_len=4097), dict(batch=4096, seq_len=2)], ids=str)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_distributions_are_what_they_claim() -> None:
    sizes = dict(batch=4, seq_len=10000)
    rng = np.random.default_rng(0)
    long = REF.generate_inputs("long_memory", sizes, rng)["a"]
    assert 1 - 1e-3 <= long.min() and long.max() <= 1 - 1e-4 + 1e-7
    flips = REF.generate_inputs("sign_flips", sizes, rng)["a"]
    assert 0.4 < (flips < 0).mean() < 0.6
    resets = REF.generate_inputs("resets", sizes, rng)["a"]
    assert 20 <= (resets == 0).sum() <= 160  # about 0.002 of 40000


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(batch=1, seq_len=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["a", "x", "h", "batch", "seq_len"]
    sizes = [c["sizes"] for c in FUNCTIONAL]
    for k in ("batch", "seq_len"):
        assert any(s[k] == PARAMS[k]["max"] for s in sizes), k
    assert {1, 2, 3} <= {s["seq_len"] for s in sizes}
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])
    assert CH.cost_of("bytes", PERFORMANCE["sizes"]) == 201_326_592  # 201 MB: four times the L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

HARD = [c for c in FUNCTIONAL if c["sizes"]["seq_len"] >= 30000 and c["sizes"]["seq_len"] <= 200001]


@pytest.mark.parametrize("case", HARD, ids=[c["name"] for c in HARD])
def test_float32_orders_pass_with_margin(case: dict[str, Any]) -> None:
    inputs, ref = case_inputs(case), case_reference(case)
    a, x = inputs["a"], inputs["x"]
    assert worst_ratio(sequential_float32(a, x), ref) <= 0.25
    for chunk in (4, 64, 2048, 4096):  # 4096: the reference's tile
        assert worst_ratio(chunked_float32(a, x, chunk), ref) <= 0.25, chunk


def test_every_functional_test_passes_the_chunked_float32_scan() -> None:
    for case in FUNCTIONAL:
        if case["sizes"]["seq_len"] > 200001:
            continue  # `longest` is the same distribution as long_memory_ragged, 20 times longer
        inputs = case_inputs(case)
        assert worst_ratio(chunked_float32(inputs["a"], inputs["x"], 2048), case_reference(case)) <= 0.25, case["name"]


@pytest.mark.parametrize("case", HARD, ids=[c["name"] for c in HARD])
def test_wrong_recurrences_fail(case: dict[str, Any]) -> None:
    inputs, ref = case_inputs(case), case_reference(case)
    a, x = inputs["a"], inputs["x"]
    half_a = a.astype(np.float16).astype(F32)  # decays rounded to half precision
    assert worst_ratio(sequential_float32(half_a, x), ref) >= 10
    exclusive = np.concatenate([np.zeros((a.shape[0], 1), F32), sequential_float32(a, x)[:, :-1]], axis=1)
    assert worst_ratio(exclusive, ref) >= 10
    no_reset = np.where(a == 0, F32(1), a)  # a chunked scan that drops zero decays
    if (a == 0).any():
        assert worst_ratio(sequential_float32(no_reset, x), ref) >= 10
