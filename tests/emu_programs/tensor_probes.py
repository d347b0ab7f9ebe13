"""Tensor-core probe programs (tensor_*.cu), run the same way on emu and on a
GPU, with deterministic text outputs that can be diffed between the two.

Every probe's inputs make its arithmetic exact (small integers, or values
whose tf32 rounding is known), so any faithful implementation prints the same
bytes. `python tests/emu_programs/tensor_probes.py --backend cuda --out DIR`
writes DIR/<probe>.txt on a GPU box (gpu/emu-tensor.sh); copied to
tests/emu_programs/expected/, tests/test_emu_tensor.py diffs emu against them.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROGRAMS = Path(__file__).parent
SM90A_PROGRAMS = {"tensor_wgmma.cu", "tensor_wgmma_tf32.cu", "tensor_wgmma_gemm.cu"}  # Hopper's architecture-specific instructions (wgmma)


class Runner:
    """Builds a probe program and calls its solve(arrays and ints); returns the
    arrays as they are after the call."""

    def call(self, program: str, *args: object) -> list[np.ndarray]:
        raise NotImplementedError


class EmuRunner(Runner):
    def __init__(self, cache: Path):
        self.cache = cache
        self.libs: dict[str, ctypes.CDLL] = {}
        self.errors: list[str] = []

    def library(self, program: str) -> ctypes.CDLL:
        from harness.backends.emu import build_emu_library

        if program not in self.libs:
            lib = ctypes.CDLL(str(build_emu_library(PROGRAMS / program, self.cache)))
            lib.harness_emu_error.restype = ctypes.c_char_p
            self.libs[program] = lib
        return self.libs[program]

    def call(self, program: str, *args: object) -> list[np.ndarray]:
        lib = self.library(program)
        lib.harness_emu_reset()
        arrays = [np.ascontiguousarray(a) for a in args if isinstance(a, np.ndarray)]
        it = iter(arrays)
        conv = [next(it).ctypes.data_as(ctypes.c_void_p) if isinstance(a, np.ndarray) else ctypes.c_int(int(a))
                for a in args]
        lib.solve(*conv)
        err = lib.harness_emu_error()
        if err:
            raise RuntimeError(f"{program}: {err.decode()}")
        return arrays


class CudaRunner(Runner):
    def __init__(self, cache: Path):
        import cupy  # noqa: F401  (fails early without a GPU stack)

        self.cache = cache
        self.libs: dict[str, ctypes.CDLL] = {}

    def call(self, program: str, *args: object) -> list[np.ndarray]:
        import cupy as cp

        from harness.build.nvcc import build_library

        if program not in self.libs:
            arch = "sm_90a" if program in SM90A_PROGRAMS else "sm_90"
            self.libs[program] = ctypes.CDLL(str(build_library(PROGRAMS / program, self.cache, arch)))
        device = [cp.asarray(a) for a in args if isinstance(a, np.ndarray)]
        it = iter(device)
        conv = [ctypes.c_void_p(next(it).data.ptr) if isinstance(a, np.ndarray) else ctypes.c_int(int(a)) for a in args]
        self.libs[program].solve(*conv)
        cp.cuda.runtime.deviceSynchronize()
        return [d.get() for d in device]


def matrix_text(m: np.ndarray) -> str:
    """One row per line; float32 values as exact decimal (%.9g round-trips)."""
    m = np.atleast_2d(m)
    return "\n".join(" ".join(f"{float(v):.9g}" for v in row) for row in m) + "\n"


def small_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-3, 4, shape).astype(np.float32)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (uint16)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


# ---- WMMA GEMM ---------------------------------------------------------------
# (kind, variant) -> (name, tile M, tile N, tile K, A col-major, B col-major); see tensor_wmma_gemm.cu
WMMA_VARIANTS = {
    (0, 0): ("half_m16n16k16_rr", 16, 16, 16, False, False), (0, 1): ("half_m16n16k16_rc", 16, 16, 16, False, True),
    (0, 2): ("half_m16n16k16_cr", 16, 16, 16, True, False), (0, 3): ("half_m16n16k16_cc", 16, 16, 16, True, True),
    (0, 4): ("half_m32n8k16_rr", 32, 8, 16, False, False), (0, 5): ("half_m8n32k16_cc", 8, 32, 16, True, True),
    (1, 0): ("bf16_m16n16k16_rc", 16, 16, 16, False, True), (1, 4): ("bf16_m32n8k16_rr", 32, 8, 16, False, False),
    (1, 5): ("bf16_m8n32k16_cr", 8, 32, 16, True, False),
    (2, 0): ("tf32raw_m16n16k8_rr", 16, 16, 8, False, False), (3, 3): ("tf32rna_m16n16k8_cc", 16, 16, 8, True, True),
    (4, 1): ("double_m8n8k4_rc", 8, 8, 4, False, True), (4, 2): ("double_m8n8k4_cr", 8, 8, 4, True, False),
}


def wmma_operand(kind: int, x: np.ndarray, col: bool) -> np.ndarray:
    """x (float32) in the program's memory type and layout."""
    x = np.asfortranarray(x) if col else x
    flat = x.ravel(order="F" if col else "C")
    if kind == 0:
        return flat.astype(np.float16)
    if kind == 1:
        return to_bf16_bits(flat)
    if kind == 4:
        return flat.astype(np.float64)
    return flat.astype(np.float32)


def run_wmma_gemm(runner: Runner, kind: int, variant: int, a: np.ndarray, b: np.ndarray, c_col: bool) -> np.ndarray:
    _, tm, tn, tk, a_col, b_col = WMMA_VARIANTS[kind, variant]
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros(m * n, np.float64 if kind == 4 else np.float32)
    res = runner.call("tensor_wmma_gemm.cu", wmma_operand(kind, a, a_col), wmma_operand(kind, b, b_col), out,
                      m, n, k, kind, variant, int(c_col))[2]
    return res.reshape((n, m)).T if c_col else res.reshape(m, n)


def wmma_exact_inputs(kind: int, variant: int) -> tuple[np.ndarray, np.ndarray, bool]:
    _, tm, tn, tk, _, _ = WMMA_VARIANTS[kind, variant]
    rng = np.random.default_rng(100 + 10 * kind + variant)
    m, n, k = 2 * tm, 3 * tn, 4 * tk
    return small_ints(rng, (m, k)), small_ints(rng, (k, n)), variant % 2 == 1


def wmma_exact(kind: int, variant: int) -> Callable[[Runner], str]:
    def probe(runner: Runner) -> str:
        a, b, c_col = wmma_exact_inputs(kind, variant)
        return matrix_text(run_wmma_gemm(runner, kind, variant, a, b, c_col))
    return probe


def tf32_wmma_rounding(runner: Runner) -> str:
    """A's entries have low mantissa bits set: fed raw, the tensor core drops
    them; through __float_to_tf32 they round to nearest. B is the identity,
    so C shows the tf32 value of each A entry."""
    a = tf32_probe_values().reshape(16, 8)
    b = np.zeros((8, 16), np.float32)
    b[np.arange(8), np.arange(8)] = 1
    raw = run_wmma_gemm(runner, 2, 0, a, b, False)[:, :8]
    rna = run_wmma_gemm(runner, 3, 3, a, b, False)[:, :8]
    return "raw\n" + hex_text(raw) + "rna\n" + hex_text(rna)


def tf32_probe_values() -> np.ndarray:
    """128 float32 values exercising tf32 rounding: the low 13 bits just below,
    at and above the halfway point, with and without kept bits above them,
    carries into the exponent, negatives."""
    base = np.array([1.0, 1.5, -1.25, 3.0, 0.09375, -7.0, 1.9990234375, 100.0], np.float32).view(np.uint32)
    low = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x17FF, 0x0800,
                    0x2000, 0x2FFF, 0x3000, 0x3001, 0x6001, 0x7FFFF, 0x5000, 0x4FFF], np.uint32)
    return (base[:, None] | low[None, :]).ravel().view(np.float32)


def hex_text(m: np.ndarray) -> str:
    m = np.atleast_2d(np.ascontiguousarray(m, np.float32))
    return "\n".join(" ".join(f"{int(v):08x}" for v in row) for row in m.view(np.uint32)) + "\n"


# ---- mma.sync + ldmatrix + cp.async GEMM --------------------------------------
MMA_KINDS = {0: "f16", 1: "bf16", 2: "tf32"}  # see tensor_mma_gemm.cu
MMA_BUGS = {0: "correct", 1: "swapped", 2: "nowait"}


def run_mma_gemm(runner: Runner, kind: int, a: np.ndarray, b: np.ndarray, bug: int = 0) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    conv = {0: lambda x: x.astype(np.float16), 1: to_bf16_bits, 2: lambda x: x.astype(np.float32)}[kind]
    out = np.zeros(m * n, np.float32)
    res = runner.call("tensor_mma_gemm.cu", conv(np.ascontiguousarray(a)), conv(np.ascontiguousarray(b)), out,
                      m, n, k, kind, bug)[2]
    return res.reshape(m, n)


def mma_exact_inputs(kind: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(200 + kind)
    return small_ints(rng, (32, 48)), small_ints(rng, (48, 32))


def mma_exact(kind: int, bug: int) -> Callable[[Runner], str]:
    def probe(runner: Runner) -> str:
        return matrix_text(run_mma_gemm(runner, kind, *mma_exact_inputs(kind), bug=bug))
    return probe


# ---- Fragment layouts ----------------------------------------------------------
MMA_LAYOUT_VARIANTS = {0: ("f16", 8), 1: ("f16", 16), 2: ("bf16", 8), 3: ("bf16", 16), 4: ("tf32", 4), 5: ("tf32", 8)}
LDMATRIX_VARIANTS = {10: "x1", 11: "x2", 12: "x4", 13: "x1_trans", 14: "x2_trans", 15: "x4_trans"}


def mma_layout_inputs(variant: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A[r][c] = r*K + c + 1 and B = a signed permutation-like pattern, so
    every D element is a distinct exact integer that depends on where each
    fragment element came from; C = 1000 * (r*8 + c)."""
    _, k = MMA_LAYOUT_VARIANTS[variant]
    a = (np.arange(16 * k).reshape(16, k) + 1).astype(np.float32)
    b = np.array([[((kk * 3 + n * 5) % 7) - 3 for n in range(8)] for kk in range(k)], np.float32)
    c = (1000 * np.arange(128).reshape(16, 8)).astype(np.float32)
    return a, b, c


def run_mma_layout(runner: Runner, variant: int) -> np.ndarray:
    a, b, c = mma_layout_inputs(variant)
    d = np.zeros(128, np.float32)
    return runner.call("tensor_mma_layout.cu", a, b, c, d, np.zeros(1, np.uint16), variant)[3].reshape(32, 4)


def run_ldmatrix(runner: Runner, variant: int) -> np.ndarray:
    out = np.zeros(256, np.uint16)
    z = np.zeros(1, np.float32)
    return runner.call("tensor_mma_layout.cu", z, z, z, z, out, variant)[4].reshape(32, 8)


def lane_text(m: np.ndarray) -> str:
    """One line per lane: its values (integers)."""
    return "".join(f"lane {lane:2d}: " + " ".join(str(int(v)) for v in row) + "\n" for lane, row in enumerate(m))


# ---- cp.async ------------------------------------------------------------------
def cp_async_source() -> np.ndarray:
    return (np.arange(5 * 128) * 0.5 + 1).astype(np.float32)


def run_cp_async(runner: Runner) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    out = np.full(5 * 128, -7, np.float32)
    early, mid = np.zeros(4 * 128, np.float32), np.zeros(4 * 128, np.float32)
    _, out, early, mid = runner.call("tensor_cp_async.cu", cp_async_source(), out, early, mid)
    return out.reshape(5, 32, 4), early.reshape(4, 32, 4), mid.reshape(4, 32, 4)


def cp_async_probe(runner: Runner) -> str:
    out, _, _ = run_cp_async(runner)  # early/mid are races on a GPU: not printed
    return "".join(f"stage {s}\n" + matrix_text(out[s]) for s in range(5))


# ---- wgmma (tensor_wgmma.cu, sm_90a) --------------------------------------------
@dataclass(frozen=True)
class Wgmma:
    """One tensor_wgmma.cu launch: D (128 x n) = scale_a * A (128 x 32) @ B (32 x n)."""

    bf16: bool
    n: int
    swizzle: int  # the descriptor's code: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
    trans_a: int  # imm-trans-a: 0 K-major, 1 M-major (unused with a_regs)
    trans_b: int  # imm-trans-b: 0 K-major, 1 N-major
    a_regs: bool = False
    scale_a: int = 1
    bad_lbo: bool = False  # A's descriptor has a wrong leading-dimension byte offset

    @property
    def name(self) -> str:
        swizzle = {0: "none", 1: "sw128", 2: "sw64", 3: "sw32"}[self.swizzle]
        a = "aReg" if self.a_regs else ("aM" if self.trans_a else "aK")
        return (f"wgmma_{'bf16' if self.bf16 else 'f16'}_m64n{self.n}k16_{swizzle}_{a}_{'bN' if self.trans_b else 'bK'}"
                + ("_negA" if self.scale_a == -1 else "") + ("_badLBO" if self.bad_lbo else ""))


WGMMA_SHAPES = [(8, 0, 0), (8, 1, 1), (64, 0, 0), (64, 0, 1), (64, 1, 0), (64, 1, 1), (256, 0, 0), (256, 1, 1)]
WGMMA_VARIANTS = [
    *(Wgmma(bf16, n, swizzle, ta, tb) for bf16 in (False, True) for swizzle in (0, 1, 2, 3) for n, ta, tb in WGMMA_SHAPES),
    *(Wgmma(bf16, n, swizzle, 0, tb, a_regs=True) for bf16 in (False, True) for n in (8, 64) for tb in (0, 1)
      for swizzle in (0, 1)),
    Wgmma(False, 64, 0, 0, 0, scale_a=-1), Wgmma(False, 64, 1, 0, 0, scale_a=-1),
    Wgmma(False, 64, 0, 0, 0, bad_lbo=True), Wgmma(True, 64, 0, 0, 0, bad_lbo=True),
]


def wgmma_inputs(v: Wgmma) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(300 + v.n + 7 * v.swizzle + 3 * v.trans_a + 5 * v.trans_b + 11 * v.bf16)
    return small_ints(rng, (128, 32)), small_ints(rng, (32, v.n))


def run_wgmma(runner: Runner, v: Wgmma, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.zeros(128 * v.n, np.float32)
    res = runner.call("tensor_wgmma.cu", np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32), d,
                      v.n, int(v.bf16), v.swizzle, v.trans_a, v.trans_b, int(v.a_regs), v.scale_a, int(v.bad_lbo))[2]
    return res.reshape(128, v.n)


def wgmma_probe(v: Wgmma) -> Callable[[Runner], str]:
    def probe(runner: Runner) -> str:
        return matrix_text(run_wgmma(runner, v, *wgmma_inputs(v)))
    return probe


# ---- wgmma with tf32 operands (tensor_wgmma_tf32.cu, sm_90a) ----------------------
@dataclass(frozen=True)
class WgmmaTf32:
    """One tensor_wgmma_tf32.cu launch: D (128 x n) = scale_a * A (128 x 32) @ B (32 x n), four k8 steps.

    low_bits: every operand is +-(1 + j/32 + 3 * 2^-12), j < 8: the 3 * 2^-12 lies below
    tf32's 10 mantissa bits (0.75 of its last place in [1, 2)), so a tensor core
    that reads the upper 19 bits gives the product of +-(1 + j/32), one that
    rounded would not; every such sum is exact in float32."""

    n: int
    swizzle: int  # the descriptor's code: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
    a_regs: bool = False
    scale_a: int = 1
    bad_lbo: bool = False
    low_bits: bool = False

    @property
    def name(self) -> str:
        swizzle = {0: "none", 1: "sw128", 2: "sw64", 3: "sw32"}[self.swizzle]
        return (f"wgmma_tf32_m64n{self.n}k8_{swizzle}_{'aReg' if self.a_regs else 'aK'}"
                + ("_negA" if self.scale_a == -1 else "") + ("_badLBO" if self.bad_lbo else "")
                + ("_lowBits" if self.low_bits else ""))


WGMMA_TF32_VARIANTS = [
    *(WgmmaTf32(n, swizzle) for n in (8, 64, 256) for swizzle in (0, 1, 2, 3)),
    *(WgmmaTf32(n, swizzle, a_regs=True) for n in (8, 64) for swizzle in (0, 1)),
    WgmmaTf32(64, 0, scale_a=-1), WgmmaTf32(64, 1, scale_a=-1), WgmmaTf32(64, 0, bad_lbo=True),
    WgmmaTf32(64, 1, low_bits=True), WgmmaTf32(64, 0, a_regs=True, low_bits=True),
]


def tf32_truncated(x: np.ndarray) -> np.ndarray:
    """The value a tensor core reads from a float32: its upper 19 bits."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def wgmma_tf32_inputs(v: WgmmaTf32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(500 + v.n + 7 * v.swizzle + 3 * v.a_regs + 5 * v.low_bits)
    if not v.low_bits:
        return small_ints(rng, (128, 32)), small_ints(rng, (32, v.n))

    def low(shape: tuple[int, int]) -> np.ndarray:
        sign = rng.choice(np.array([-1.0, 1.0]), shape)
        return (sign * (1 + rng.integers(0, 8, shape) / 32 + 3 * 2.0**-12)).astype(np.float32)
    return low((128, 32)), low((32, v.n))


def run_wgmma_tf32(runner: Runner, v: WgmmaTf32, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.zeros(128 * v.n, np.float32)
    res = runner.call("tensor_wgmma_tf32.cu", np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32),
                      d, v.n, v.swizzle, int(v.a_regs), v.scale_a, int(v.bad_lbo))[2]
    return res.reshape(128, v.n)


def wgmma_tf32_probe(v: WgmmaTf32) -> Callable[[Runner], str]:
    def probe(runner: Runner) -> str:
        return matrix_text(run_wgmma_tf32(runner, v, *wgmma_tf32_inputs(v)))
    return probe


def wgmma_gemm_inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(400)
    return small_ints(rng, (128, 192)), small_ints(rng, (192, 256))


def run_wgmma_gemm(runner: Runner, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """tensor_wgmma_gemm.cu (the example GEMM): float32 a @ b of f16 inputs."""
    (m, k), n = a.shape, b.shape[1]
    out = np.zeros(m * n, np.float32)
    res = runner.call("tensor_wgmma_gemm.cu", np.ascontiguousarray(a, np.float16), np.ascontiguousarray(b, np.float16),
                      out, m, n, k)[2]
    return res.reshape(m, n)


PROBES: dict[str, Callable[[Runner], str]] = {
    **{f"wmma_exact_{name}": wmma_exact(kind, variant) for (kind, variant), (name, *_) in WMMA_VARIANTS.items()},
    "wmma_tf32_rounding": tf32_wmma_rounding,
    **{f"mma_gemm_{MMA_KINDS[kind]}_{MMA_BUGS[bug]}": mma_exact(kind, bug) for kind in MMA_KINDS for bug in (0, 1)},
    **{f"mma_layout_{t}_m16n8k{k}": (lambda v: lambda r: lane_text(run_mma_layout(r, v)))(v)
       for v, (t, k) in MMA_LAYOUT_VARIANTS.items()},
    **{f"ldmatrix_{name}": (lambda v: lambda r: lane_text(run_ldmatrix(r, v)))(v) for v, name in LDMATRIX_VARIANTS.items()},
    "cp_async_groups": cp_async_probe,
    **{v.name: wgmma_probe(v) for v in WGMMA_VARIANTS},
    **{v.name: wgmma_tf32_probe(v) for v in WGMMA_TF32_VARIANTS},
    "wgmma_gemm_example": lambda r: matrix_text(run_wgmma_gemm(r, *wgmma_gemm_inputs())),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["emu", "cuda"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tensor-probes-") as tmp:
        runner: Runner = EmuRunner(Path(tmp)) if args.backend == "emu" else CudaRunner(Path(tmp))
        failed = 0
        for name, probe in PROBES.items():
            try:
                (args.out / f"{name}.txt").write_text(probe(runner))
                print(f"ok   {name}")
            except Exception as e:  # one probe's failure must not hide the others' outputs
                failed += 1
                print(f"FAIL {name}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
