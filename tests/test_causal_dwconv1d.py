"""causal_dwconv1d: the oracle, the generators, the metadata and the tolerance policy.

CPU only. Inputs are built exactly as the harness builds them. The float32
emulations stand in for GPU solutions: the width taps and the bias added in
the orders kernels use (bias first then fused taps in order or reversed, or
rounded products then the bias last), and the typical mistakes (inputs,
weights or outputs in half precision, flipped taps, no bias, padding read
from the previous sequence).

`python tests/test_causal_dwconv1d.py` prints the table of spec.md, "Tolerance".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from challenge_support import ChallengeCases

F32 = np.float32
CASES = ChallengeCases("causal_dwconv1d")
CH = CASES.challenge
REF = CH.reference_module
CFG: dict[str, Any] = CH.metadata
PARAMS = {p["name"]: p for p in CFG["params"]}
FUNCTIONAL: list[dict[str, Any]] = CFG["tests"]["functional"]
PERFORMANCE: dict[str, Any] = CFG["tests"]["performance"]
case_inputs, case_reference, worst_ratio = CASES.case_inputs, CASES.case_reference, CASES.worst_ratio
OFFICIAL_STEPS = 512  # of the official case's 4 x 4096 steps: the first sequence's first 512, all 2048 channels

# ---------------------------------------------------------------------------
# float32 emulations: (x, weight, bias) -> y

Conv = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def fma(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 fused multiply-add (the float64 product of float32 values is exact)."""
    return (acc.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(F32)


def taps(x: np.ndarray, width: int, leak: bool = False) -> list[np.ndarray]:
    """taps[k][b, t, c] = x[b, t - (width-1) + k, c]: zeros before t = 0, or
    (leak) the previous sequence's last steps, as if the batch were one sequence."""
    batch, seq_len, channels = x.shape
    if leak:
        flat = np.concatenate([np.zeros((width - 1, channels), F32), x.reshape(-1, channels)])
        return [flat[k : k + batch * seq_len].reshape(x.shape) for k in range(width)]
    padded = np.concatenate([np.zeros((batch, width - 1, channels), F32), x], axis=1)
    return [padded[:, k : k + seq_len, :] for k in range(width)]


def bias_first(x: np.ndarray, w: np.ndarray, bias: np.ndarray, reverse: bool = False, leak: bool = False) -> np.ndarray:
    """acc = bias, then acc = fmaf(w[k], x_k, acc) for k in order (or reversed)."""
    t = taps(x, w.shape[1], leak)
    y = np.broadcast_to(bias, x.shape).astype(F32)
    for k in reversed(range(w.shape[1])) if reverse else range(w.shape[1]):
        y = fma(y, w[:, k], t[k])
    return y


def bias_last(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """acc = 0, acc += round(w[k] * x_k) in order, then + bias."""
    t = taps(x, w.shape[1])
    y = np.zeros(x.shape, F32)
    for k in range(w.shape[1]):
        y = (y + (w[:, k] * t[k]).astype(F32)).astype(F32)
    return (y + bias).astype(F32)


def half(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16).astype(F32)


def flipped(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return bias_first(x, np.ascontiguousarray(w[:, ::-1]), bias)


CORRECT: dict[str, Conv] = {
    "bias_first_fma": bias_first,
    "bias_first_reversed_fma": lambda x, w, b: bias_first(x, w, b, reverse=True),
    "bias_last_mul_add": bias_last,
}
WRONG: dict[str, Conv] = {
    "half_x": lambda x, w, b: bias_first(half(x), w, b),
    "half_weight": lambda x, w, b: bias_first(x, half(w), b),
    "half_y": lambda x, w, b: half(bias_first(x, w, b)),
    "flipped_taps": flipped,
    "no_bias": lambda x, w, b: bias_first(x, w, np.zeros_like(b)),
    "leaks_previous_sequence": lambda x, w, b: bias_first(x, w, b, leak=True),
}

# ---------------------------------------------------------------------------
# the oracle


def slow_loop(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Scalar transcription of spec.md, independent of the vectorised reference."""
    batch, seq_len, channels = x.shape
    width = w.shape[1]
    y = np.zeros(x.shape)
    for b in range(batch):
        for t in range(seq_len):
            for c in range(channels):
                terms = [float(w[c, k]) * float(x[b, t - (width - 1) + k, c]) for k in range(width) if t - (width - 1) + k >= 0]
                y[b, t, c] = math.fsum([float(bias[c]), *terms])
    return y


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize(
    "sizes",
    [dict(batch=1, seq_len=1, channels=1, width=1), dict(batch=2, seq_len=2, channels=3, width=4),
     dict(batch=3, seq_len=9, channels=5, width=3), dict(batch=2, seq_len=17, channels=6, width=2)],
    ids=str,
)
def test_reference_matches_scalar_loop(distribution: str, sizes: dict[str, int]) -> None:
    inputs = REF.generate_inputs(distribution, sizes, np.random.default_rng(5))
    expected = slow_loop(inputs["x"], inputs["weight"], inputs["bias"])
    np.testing.assert_allclose(REF.reference(inputs, sizes)["y"], expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# generators and metadata


@pytest.mark.parametrize("distribution", list(CFG["distributions"]))
@pytest.mark.parametrize(
    "sizes",
    [dict(batch=1, seq_len=1, channels=1, width=1), dict(batch=3, seq_len=7, channels=33, width=4),
     dict(batch=1, seq_len=3, channels=65536, width=3)],
    ids=str,
)
def test_generate_inputs_respects_contract(distribution: str, sizes: dict[str, int]) -> None:
    CASES.check_generated(distribution, sizes)


def test_large_offset_is_what_it_claims() -> None:
    sizes = dict(batch=2, seq_len=64, channels=256, width=4)
    inputs = REF.generate_inputs("large_offset", sizes, np.random.default_rng(0))
    x, w = inputs["x"].astype(np.float64), inputs["weight"].astype(np.float64)
    y = np.abs(REF.reference(inputs, sizes)["y"])
    assert np.abs(x).mean() > 8  # every channel on a large constant
    terms = np.abs(w[None, None, :, :]).sum(axis=-1) * np.abs(x)  # about sum_k |w x|
    full, start = y[:, 3:, :], y[:, :3, :]
    assert np.median(full) < 0.1 * np.median(terms)  # the constant cancels once the window is full
    assert np.median(start[:, 0, :]) > 5 * np.median(full)  # but not at t = 0, where the padding is


def test_generate_inputs_rejects_unknown_distribution() -> None:
    with pytest.raises(ValueError):
        REF.generate_inputs("no_such_distribution", dict(batch=1, seq_len=1, channels=1, width=1), np.random.default_rng(0))


def test_metadata_is_consistent() -> None:
    assert [p["name"] for p in CFG["params"]] == ["x", "weight", "bias", "y", "batch", "seq_len", "channels", "width"]
    cases = [*FUNCTIONAL, PERFORMANCE]
    assert len({c["name"] for c in cases}) == len(cases)
    sizes = [c["sizes"] for c in FUNCTIONAL]
    assert {s["width"] for s in sizes} == {1, 2, 3, 4}
    assert any(s["seq_len"] < s["width"] for s in sizes)  # shorter than the window
    assert {1, 3} <= {s["channels"] for s in sizes}
    assert any(s["channels"] % 4 and s["channels"] > 1024 for s in sizes)  # rows not 16-byte aligned
    assert any(s["channels"] == PARAMS["channels"]["max"] for s in sizes)
    assert any(s["batch"] > 256 for s in sizes) and any(s["seq_len"] > 65536 for s in sizes)
    assert {c["distribution"] for c in FUNCTIONAL} == set(CFG["distributions"])


def test_cost_model_at_the_official_size() -> None:
    sizes = PERFORMANCE["sizes"]
    assert CH.cost_of("bytes", sizes) == 268_476_416  # x and y 134 MB each: past the 50 MB L2


# ---------------------------------------------------------------------------
# the tolerance policy, both ways

MARGIN = 4.0  # every correct order stays below 1/MARGIN of the tolerance


def inputs_and_reference(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    inputs = case_inputs(case)
    x, w, bias = inputs["x"], inputs["weight"], inputs["bias"]
    if case is PERFORMANCE:
        x = np.ascontiguousarray(x[:1, :OFFICIAL_STEPS])
        sizes = dict(PERFORMANCE["sizes"], batch=1, seq_len=OFFICIAL_STEPS)
        return x, w, bias, REF.reference({"x": x, "weight": w, "bias": bias}, sizes)["y"]
    return x, w, bias, case_reference(case)


def test_every_functional_test_and_the_official_one_pass_float32_in_every_order() -> None:
    for case in [*FUNCTIONAL, PERFORMANCE]:
        x, w, bias, ref = inputs_and_reference(case)
        for order, conv in CORRECT.items():
            assert worst_ratio(conv(x, w, bias), ref) <= 1 / MARGIN, (case["name"], order)


WRONG_CASES = ["official", "official_channels", "many_batches", "width_3", "channels_1027"]


@pytest.mark.parametrize("name", WRONG_CASES)
def test_wrong_convolutions_fail(name: str) -> None:
    case = next(c for c in [*FUNCTIONAL, PERFORMANCE] if c["name"] == name)
    x, w, bias, ref = inputs_and_reference(case)
    for mistake, conv in WRONG.items():
        if mistake == "leaks_previous_sequence" and x.shape[0] == 1:
            continue  # a single sequence has no previous one to leak from
        assert worst_ratio(conv(x, w, bias), ref) >= 3.0, mistake


if __name__ == "__main__":  # the table of spec.md
    rows = [c for c in [*FUNCTIONAL, PERFORMANCE] if c["name"] in (*WRONG_CASES, "width_1", "seq_3_shorter_than_width")]
    data = [inputs_and_reference(c) for c in rows]
    print("order".ljust(24) + "".join(c["name"][:18].rjust(22) for c in rows))
    for order, conv in {**CORRECT, **WRONG}.items():
        cells = []
        for x, w, bias, ref in data:
            out = conv(x, w, bias)
            err = np.abs(out.astype(np.float64) - ref).max()
            cells.append(f"{err:9.2e} {worst_ratio(out, ref):9.3g}  ".rjust(22))
        print(order.ljust(24) + "".join(cells))
