"""emu backend on the SSM selective scan: the seed's naive solution (and the
repository's solutions when present) against a float64 NumPy reference."""

from __future__ import annotations

import ctypes
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from harness.backends.emu import build_emu_library

ROOT = Path(__file__).resolve().parent.parent
SEED_NAIVE = Path(__file__).parent / "emu_programs" / "ssm_naive.cu"
SOLUTIONS = sorted((ROOT / "solutions" / "ssm_selective_scan").glob("*.cu"))
SIZES = [(1, 4, 2, 2), (1, 33, 5, 3), (2, 64, 32, 16), (3, 100, 17, 64), (2, 257, 64, 16), (4, 512, 64, 16)]
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")


def reference(u, delta, A, B, C, skip):  # noqa: ANN001, ANN201 - arrays
    u, delta, A, B, C, skip = (a.astype(np.float64) for a in (u, delta, A, B, C, skip))
    batch, L, D = u.shape
    h = np.zeros((batch, D, A.shape[1]))
    y = np.zeros((batch, L, D))
    for t in range(L):
        dt = delta[:, t, :, None]
        h = np.exp(dt * A[None]) * h + dt * B[:, t, None, :] * u[:, t, :, None]
        y[:, t] = (h * C[:, t, None, :]).sum(-1) + skip * u[:, t]
    return y


def inputs(batch: int, L: int, D: int, N: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((batch, L, D)).astype(np.float32),
        rng.uniform(0.01, 0.3, (batch, L, D)).astype(np.float32),
        -rng.uniform(0.1, 1.5, (D, N)).astype(np.float32),
        rng.standard_normal((batch, L, N)).astype(np.float32),
        rng.standard_normal((batch, L, N)).astype(np.float32),
        rng.standard_normal(D).astype(np.float32),
    ]


@pytest.mark.parametrize("source", [SEED_NAIVE, *SOLUTIONS], ids=lambda p: p.stem)
def test_ssm_solution_matches_float64_reference(source: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    lib = ctypes.CDLL(str(build_emu_library(source, tmp_path_factory.mktemp("emu"))))
    lib.harness_emu_error.restype = ctypes.c_char_p
    started = time.perf_counter()
    for seed, (batch, L, D, N) in enumerate(SIZES):
        u, delta, A, B, C, skip = arrays = inputs(batch, L, D, N, seed)
        y = np.full((batch, L, D), np.nan, np.float32)
        ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in (*arrays, y)]
        lib.solve(*ptrs, batch, L, D, N)
        assert lib.harness_emu_error() is None
        np.testing.assert_allclose(y, reference(u, delta, A, B, C, skip), rtol=1e-4, atol=1e-4)
    assert time.perf_counter() - started < 30
