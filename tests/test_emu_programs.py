"""emu backend: small CUDA programs (tests/emu_programs/) against NumPy."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from harness.backends.emu import build_emu_library

PROGRAMS = Path(__file__).parent / "emu_programs"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("emu-cache")


class Solution:
    """A built program loaded in this process (for programs that must not crash)."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.harness_emu_error.restype = ctypes.c_char_p
        self.lib.harness_emu_reset()

    def __call__(self, *args: object) -> None:
        conv = [a.ctypes.data_as(ctypes.c_void_p) if isinstance(a, np.ndarray) else ctypes.c_int(int(a)) for a in args]
        self.lib.solve(*conv)
        assert self.error() is None

    def error(self) -> str | None:
        e = self.lib.harness_emu_error()
        return e.decode() if e else None


def load(name: str, cache: Path) -> Solution:
    return Solution(build_emu_library(PROGRAMS / name, cache))


def test_warp_collectives(cache: Path) -> None:
    sol = load("warp_collectives.cu", cache)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 100, 64).astype(np.int32)
    x[5] = 7
    out = np.full(14 * 64, -99, np.int32)
    sol(x, out)
    t = np.arange(64)
    lane = t % 32
    base = t - lane
    # divergent: lanes < 16 shuffle down by 1 within 16; lanes >= 16 xor 3
    seg = (lane // 16) * 16
    exp_div = np.where(lane < 16, np.where(lane % 16 + 1 < 16, x[np.minimum(t + 1, 63)], x), x[base + (lane ^ 3)])
    np.testing.assert_array_equal(out[:64], exp_div)
    w = out[64 : 6 * 64].reshape(5, 64)
    np.testing.assert_array_equal(w[0], x[base + seg + 3])
    np.testing.assert_array_equal(w[1], np.where(lane % 16 >= 2, x[np.maximum(t - 2, 0)], x))
    np.testing.assert_array_equal(w[2], np.where(lane % 16 + 5 < 16, x[np.minimum(t + 5, 63)], x))
    np.testing.assert_array_equal(w[3], x[base + (lane ^ 8)])
    np.testing.assert_array_equal(w[4], x[base + 3])
    v = out[6 * 64 : 12 * 64].reshape(6, 64)
    for warp in range(2):
        sl = slice(32 * warp, 32 * warp + 32)
        xs = x[sl]
        ballot = sum(1 << k for k in range(32) if xs[k] % 3 == 0)
        assert (v[0][sl].astype(np.uint32) == np.uint32(ballot)).all()
        assert (v[1][sl] == 1).all()
        assert (v[2][sl] == int((xs == 7).any())).all()
        assert (v[4][sl] == xs.sum()).all()
        assert v[5][sl][0] == xs[:8].sum()
        assert (v[5][sl][8:] == -1).all()
    np.testing.assert_array_equal(v[3].astype(np.uint32), np.where(lane % 2 == 0, np.uint32(0x55555555), 0))
    pw = out[12 * 64 : 12 * 64 + 96]
    np.testing.assert_array_equal(pw[:32].astype(np.uint32), np.uint32(0xFFFFFFFF))
    np.testing.assert_array_equal(pw[32:48], 0xFFFF)
    t48 = np.arange(48)
    np.testing.assert_array_equal(pw[48:96], np.where((t48 % 32 == 31) | (t48 == 47), t48, t48 + 1))


@pytest.mark.parametrize("schedule", [0, 1, 2])
def test_misc_kernels(cache: Path, schedule: int) -> None:
    sol = load("kernels_misc.cu", cache)
    sol.lib.harness_emu_set_schedule(schedule, 7)
    rng = np.random.default_rng(2)
    rows, cols = 37, 53
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    mt = np.zeros((cols, rows), np.float32)
    nx, ny, nz = 9, 7, 5
    idx = np.full((nz, ny, nx), -1, np.int32)
    n4 = 300
    v = rng.uniform(-2, 2, 4 * n4).astype(np.float32)
    mo = np.zeros(8 * n4, np.float32)
    sol(m, mt, rows, cols, idx, nx, ny, nz, v, mo, n4)
    np.testing.assert_array_equal(mt, m.T)
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    tid = x % 4 + 4 * (y % 3 + 3 * (z % 2))
    gx, gy = (nx + 3) // 4, (ny + 2) // 3
    bid = x // 4 + gx * (y // 3 + gy * (z // 2))
    np.testing.assert_array_equal(idx, tid * 1000 + bid)
    q = v.reshape(n4, 4).astype(np.float64)
    i = np.arange(n4)
    gelu = 0.5 * q[:, 2] * (1 + np.tanh(0.7978845608 * (q[:, 2] + 0.044715 * q[:, 2] ** 3)))
    popc = np.array([bin(k).count("1") for k in i])
    expect = np.stack([
        np.exp(q[:, 0]) + np.exp(q[:, 1]),
        1 / np.sqrt(np.abs(q[:, 2]) + 1) + np.sqrt(np.abs(q[:, 3])),
        q[:, 0] / 2 + q[:, 1] * 3 + 1,
        np.round(q[:, 0].astype(np.float32) * np.float32(10)),
        np.minimum(q[:, 0], q[:, 1]) + np.maximum(q[:, 2], q[:, 3]) + np.minimum(i, 3) + np.maximum(i, 5),
        gelu + np.log(np.abs(q[:, 3]) + 1) + np.log(2) + np.exp2(q[:, 0]),
        np.clip(q[:, 1], 0, 1) + popc + np.copysign(1, q[:, 3]),
        q.sum(1),
    ], axis=1)
    np.testing.assert_allclose(mo.reshape(n4, 8), expect, rtol=1e-5, atol=1e-5)


def test_reductions_dynamic_shared_early_exit(cache: Path) -> None:
    sol = load("reductions.cu", cache)
    rng = np.random.default_rng(3)
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    total = np.zeros(1, np.float32)
    ni = 1000  # the last block of 128 has 104 live threads, 24 exit before the barriers
    xi = rng.integers(-50, 100, ni).astype(np.int32)
    nblk = (ni + 127) // 128
    block_max = np.zeros(nblk, np.int32)
    counts = np.zeros(3 * nblk, np.int32)
    sol(x, total, n, xi, block_max, counts, ni)
    assert total[0] == pytest.approx(x.astype(np.float64).sum(), abs=1e-2)
    padded = np.concatenate([xi, np.full(nblk * 128 - ni, -(10**6), np.int32)]).reshape(nblk, 128)
    np.testing.assert_array_equal(block_max, padded.max(1))
    valid = np.arange(nblk * 128).reshape(nblk, 128) < ni
    c = counts.reshape(nblk, 3)
    np.testing.assert_array_equal(c[:, 0], ((padded > 0) & valid).sum(1))
    np.testing.assert_array_equal(c[:, 1], 1)
    np.testing.assert_array_equal(c[:, 2], ((padded > 90) & valid).any(1).astype(int))


def test_contended_atomics(cache: Path) -> None:
    sol = load("atomics.cu", cache)
    rng = np.random.default_rng(4)
    n = 5000
    x = rng.integers(0, 1000, n).astype(np.int32)
    hist = np.zeros(16, np.int32)
    ires = np.array([0, 0, -(2**31), 2**31 - 1, -1, 0, 0, 0, 0, 0], np.int32)
    ures = np.zeros(3, np.uint32)
    fres = np.array([0, -1e30], np.float32)
    dres = np.zeros(1, np.float64)
    ull = np.zeros(1, np.uint64)
    sol(x, n, hist, ires, ures, fres, dres, ull)
    np.testing.assert_array_equal(hist, np.bincount(x & 15, minlength=16))
    assert ires[0] == x.sum() and ires[1] == -x.sum()
    assert ires[2] == x.max() and ires[3] == x.min()
    bits = np.bitwise_or.reduce(np.left_shift(1, x & 31).astype(np.int64)) & 0xFFFFFFFF
    u = ires.view(np.uint32)
    assert int(u[4]) == ~int(bits) & 0xFFFFFFFF
    assert int(u[5]) == int(bits)
    assert ires[6] == np.bitwise_xor.reduce(x)
    assert ires[7] == 42
    assert 1 <= ires[8] <= n and ires[9] == ires[8]
    assert ures[0] == n % 10 and ures[1] == x.sum() and ures[2] == x.max()
    assert fres[0] == (x & 7).sum() and fres[1] == x.max() * 0.5
    assert dres[0] == x.sum() * 0.25
    assert int(ull[0]) == int(x.astype(np.uint64).sum()) << 20


def test_constant_memory_and_symbols(cache: Path) -> None:
    sol = load("constant_symbols.cu", cache)
    rng = np.random.default_rng(5)
    n = 200
    x = rng.uniform(-1, 1, n).astype(np.float32)
    coeffs = rng.standard_normal(8).astype(np.float32)
    y = np.zeros(n, np.float32)
    calls = np.zeros(1, np.int32)
    sol(x, y, n, coeffs, calls)
    expect = np.polyval(coeffs[::-1].astype(np.float64), x) * 3 + np.array([1, 2, 3, 4])[np.arange(n) & 3]
    np.testing.assert_allclose(y, expect, rtol=1e-5, atol=1e-5)
    assert calls[0] == 2


def test_multiblock_scan(cache: Path) -> None:
    sol = load("multiblock_scan.cu", cache)
    rng = np.random.default_rng(6)
    for n in (1, 255, 256, 257, 70_001):
        x = rng.integers(-5, 10, n).astype(np.int32)
        out = np.zeros(n, np.int32)
        sol(x, out, n)
        np.testing.assert_array_equal(out, np.cumsum(x))


def test_a_damaged_precompiled_runtime_in_the_cache_does_not_break_builds(tmp_path: Path) -> None:
    # the first build precompiles the runtime header into the cache; a .gch cut
    # short (a full disk, a killed build) must not turn later builds into errors
    # or wrong programs: g++ reads the runtime's source instead
    load("multiblock_scan.cu", tmp_path)
    (gch,) = tmp_path.glob("emu-runtime-*/emu_runtime.h.gch")
    gch.write_bytes(gch.read_bytes()[:4096])
    for built in tmp_path.glob("multiblock_scan-emu-*.so"):
        built.unlink()
    sol = load("multiblock_scan.cu", tmp_path)
    x = np.random.default_rng(7).integers(-5, 10, 70_001).astype(np.int32)
    out = np.zeros(x.size, np.int32)
    sol(x, out, x.size)
    np.testing.assert_array_equal(out, np.cumsum(x))


def test_precompiled_runtimes_unused_for_a_week_leave_the_cache(tmp_path: Path) -> None:
    # each change of the runtime or of g++ makes a new 42-50 MB one
    old, recent = tmp_path / "emu-runtime-old", tmp_path / "emu-runtime-recent"
    for folder, days in ((old, 8), (recent, 6)):
        folder.mkdir()
        (folder / "emu_runtime.h.gch").write_bytes(b"from another runtime")
        then = time.time() - days * 24 * 3600
        os.utime(folder, (then, then))
    load("multiblock_scan.cu", tmp_path)
    assert not old.exists() and recent.exists()
    assert len(list(tmp_path.glob("emu-runtime-*/emu_runtime.h.gch"))) == 2  # this runtime's, and recent


def test_half_types(cache: Path) -> None:
    sol = load("half_types.cu", cache)
    x = np.array([0.1, -2.5, 65504, 70000, 1e-6, 3.14159, -0.0, 1e-8], np.float32)
    n = len(x)
    out = np.zeros(4 * n, np.float32)
    sol(x, out, n)
    o = out.reshape(n, 4)
    with np.errstate(all="ignore"):
        _check_half_results(x, o)


def _check_half_results(x: np.ndarray, o: np.ndarray) -> None:
    h = x.astype(np.float16)
    np.testing.assert_array_equal(o[:, 0], h.astype(np.float32))
    np.testing.assert_array_equal(o[:, 1], (h * np.float16(2) + np.float16(0.5)).astype(np.float32))
    bf = (x.view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16 << 16
    np.testing.assert_array_equal(o[:, 2], bf.astype(np.uint32).view(np.float32))
    np.testing.assert_array_equal(o[:, 3], (h + h).astype(np.float32) + (-h - h).astype(np.float32) + 5)


def test_device_printf_reaches_stdout(cache: Path) -> None:
    lib = build_emu_library(PROGRAMS / "device_printf.cu", cache)
    code = textwrap.dedent(f"""
        import ctypes
        lib = ctypes.CDLL({str(lib)!r})
        lib.solve(ctypes.c_int(5))
        print("after", flush=True)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [f"block {b} of 3 says 5 (2.50)" for b in range(3)] + ["after"]


def test_cooperative_groups_tiles(cache: Path) -> None:
    sol = load("coop_groups.cu", cache)
    x = (np.arange(128, dtype=np.int32) * 3 % 17).astype(np.int32)
    out = np.zeros(8 + 128, np.int32)
    sol(x, out)
    np.testing.assert_array_equal(out[:8], x.reshape(8, 16).sum(1))
    np.testing.assert_array_equal(out[8:], np.repeat(x[::16], 16))
