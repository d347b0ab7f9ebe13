"""emu backend: Hopper's warpgroup MMA (wgmma.mma_async and its fence/commit/wait).

The probes of tests/emu_programs/tensor_probes.py named wgmma_* run
tensor_wgmma.cu (and wgmma_tf32_* tensor_wgmma_tf32.cu: tf32 operands, K-major,
every swizzle mode, A from registers, operands whose low bits a tensor core
ignores): a block of two warpgroups multiplies small integers (exact in
f16, bf16 and float32) with A and B in shared memory in every swizzle mode,
K-major and MN-major, N in {8, 64, 256}, A from registers, imm-scale-a = -1,
and a descriptor with a wrong leading-dimension byte offset; tensor_wgmma_gemm.cu
is a small example GEMM in the usual form. Each result is
checked against NumPy here, and emu's text output against the H200's, byte
for byte (tests/emu_programs/expected/, recorded by gpu/emu-tensor.sh): that
is what checks the shared-memory layouts and the fragment layout against the
hardware.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.backends.emu.translate import translate
from harness.errors import UnsupportedFeature

PROGRAMS = Path(__file__).parent / "emu_programs"
EXPECTED = PROGRAMS / "expected"
sys.path.insert(0, str(PROGRAMS))
import tensor_probes as tp  # noqa: E402

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> tp.EmuRunner:
    return tp.EmuRunner(tmp_path_factory.mktemp("emu-wgmma"))


def diff_expected(name: str, text: str) -> None:
    expected = EXPECTED / f"{name}.txt"
    assert expected.is_file(), f"no GPU output recorded for probe {name}: run gpu/emu-tensor.sh on a GPU"
    assert text == expected.read_text(), f"emu output of {name} differs from the GPU's ({expected})"


CORRECT = [v for v in tp.WGMMA_VARIANTS if not v.bad_lbo]


@needs_gxx
@pytest.mark.parametrize("variant", CORRECT, ids=[v.name for v in CORRECT])
def test_wgmma_gives_the_exact_product(runner: tp.EmuRunner, variant: tp.Wgmma) -> None:
    """D = imm-scale-a * A @ B over two k16 steps (the first with scale-d = 0
    over NaN accumulators), each thread's fragment stored by the D layout."""
    a, b = tp.wgmma_inputs(variant)
    d = tp.run_wgmma(runner, variant, a, b)
    np.testing.assert_array_equal(d, variant.scale_a * (a.astype(np.float64) @ b.astype(np.float64)))
    diff_expected(variant.name, tp.matrix_text(d))


BAD = [v for v in tp.WGMMA_VARIANTS if v.bad_lbo]


@needs_gxx
@pytest.mark.parametrize("variant", BAD, ids=[v.name for v in BAD])
def test_wgmma_wrong_leading_byte_offset_gives_a_wrong_product(runner: tp.EmuRunner, variant: tp.Wgmma) -> None:
    a, b = tp.wgmma_inputs(variant)
    d = tp.run_wgmma(runner, variant, a, b)
    assert (d != a.astype(np.float64) @ b.astype(np.float64)).mean() > 0.5
    diff_expected(variant.name, tp.matrix_text(d))


@needs_gxx
@pytest.mark.parametrize("bug, message", [
    (2, r"wgmma\.mma_async \(inline PTX\) at tensor_wgmma\.cu:\d+ in kernel wgmma_probe<.*>: needs all 128 threads of "
        r"warpgroup 0 \(threads 0\.\.127\) in block \(0,0,0\), but 32 of them exited or are outside the block"),
    (3, r"wgmma\.mma_async \(inline PTX\) at tensor_wgmma\.cu:\d+ in kernel wgmma_probe<.*>: the threads of warpgroup "
        r"0 pass different matrix descriptors"),
    (4, r"B's matrix descriptor \(0x[0-9a-f]{16}\) reaches shared address 0x3f000, outside the launch's \d+ bytes of "
        r"dynamic shared memory"),
    (5, r"deadlock in kernel wgmma_probe<.*>, block \(0,0,0\): 96 of 256 threads wait at wgmma \(tensor_wgmma\.cu:\d+, "
        r"warpgroup 0\), 32 wait at __syncthreads \(tensor_wgmma\.cu:\d+\), 128 exited"),
])
def test_wgmma_misuse_is_reported(runner: tp.EmuRunner, bug: int, message: str) -> None:
    a, b = np.zeros((128, 32), np.float32), np.zeros((32, 8), np.float32)
    with pytest.raises(RuntimeError, match=message):
        runner.call("tensor_wgmma.cu", a, b, np.zeros(128 * 8, np.float32), 8, 0, 0, 0, 0, 0, 1, bug)


TF32_CORRECT = [v for v in tp.WGMMA_TF32_VARIANTS if not v.bad_lbo]


@needs_gxx
@pytest.mark.parametrize("variant", TF32_CORRECT, ids=[v.name for v in TF32_CORRECT])
def test_tf32_wgmma_gives_the_product_of_the_upper_19_bits(runner: tp.EmuRunner, variant: tp.WgmmaTf32) -> None:
    """D = imm-scale-a * A @ B over four k8 steps, A and B stored as raw float32
    (the tensor core reads each element's upper 19 bits; the low_bits inputs
    tell that from rounding), K-major in every swizzle mode or A from registers."""
    a, b = tp.wgmma_tf32_inputs(variant)
    d = tp.run_wgmma_tf32(runner, variant, a, b)
    want = variant.scale_a * (tp.tf32_truncated(a).astype(np.float64) @ tp.tf32_truncated(b).astype(np.float64))
    np.testing.assert_array_equal(d, want)
    if variant.low_bits:
        assert not np.array_equal(d, variant.scale_a * (a.astype(np.float64) @ b.astype(np.float64)))
    diff_expected(variant.name, tp.matrix_text(d))


TF32_BAD = [v for v in tp.WGMMA_TF32_VARIANTS if v.bad_lbo]


@needs_gxx
@pytest.mark.parametrize("variant", TF32_BAD, ids=[v.name for v in TF32_BAD])
def test_tf32_wgmma_wrong_leading_byte_offset_gives_a_wrong_product(runner: tp.EmuRunner,
                                                                    variant: tp.WgmmaTf32) -> None:
    a, b = tp.wgmma_tf32_inputs(variant)
    d = tp.run_wgmma_tf32(runner, variant, a, b)
    assert (d != a.astype(np.float64) @ b.astype(np.float64)).mean() > 0.5
    diff_expected(variant.name, tp.matrix_text(d))


def test_tf32_wgmma_translates_without_transposes() -> None:
    src = wgmma_source(
        r"{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\nwgmma.fence.sync.aligned;\n"
        r"wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, p, -1, 1;\n"
        r"wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}\n",
        '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db), "r"(s)')
    out = translate(src, "k.cu")
    assert ("::harness_emu::ptx_wgmma(::harness_emu::WgmmaType::TF32, 8, false, __emu_a, "
            "::harness_emu::addr_operand(da), ::harness_emu::addr_operand(db), __emu_pred_p, (int)-1, (int)1, "
            "(int)0, (int)0, __emu_d, __FILE__, __LINE__);") in out


@needs_gxx
def test_example_wgmma_gemm_is_exact(runner: tp.EmuRunner) -> None:
    """tensor_wgmma_gemm.cu: cp.async into 128-byte-swizzled tiles (A K-major,
    B N-major), four m64n128k16 MMAs per K slice, two blocks in each direction."""
    a, b = tp.wgmma_gemm_inputs()
    c = tp.run_wgmma_gemm(runner, a, b)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))
    diff_expected("wgmma_gemm_example", tp.matrix_text(c))


def wgmma_source(instruction: str, operands: str) -> str:
    return ("__global__ void k(float* d, unsigned long long da, unsigned long long db, int s) {\n"
            f'  asm volatile("{instruction}" : {operands});\n'
            "}\n")


def test_wgmma_translates_with_its_predicate_and_sync_ops() -> None:
    """The CUTLASS-style statement: a scope, a predicate set from an operand,
    fence, MMA, commit and wait, with immediates for scale and transpose."""
    src = wgmma_source(
        r"{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\nwgmma.fence.sync.aligned;\n"
        r"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, -1, 1, 0, 1;\n"
        r"wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n}\n",
        '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db), "r"(s)')
    out = translate(src, "k.cu")
    assert "bool __emu_pred_p = false; __emu_pred_p = ((s) != 0);" in out
    assert ("::harness_emu::ptx_wgmma(::harness_emu::WgmmaType::BF16, 8, false, __emu_a, "
            "::harness_emu::addr_operand(da), ::harness_emu::addr_operand(db), __emu_pred_p, (int)-1, (int)1, "
            "(int)0, (int)1, __emu_d, __FILE__, __LINE__);") in out
    assert out.count("wgmma_sync_op") == 3


@pytest.mark.parametrize("instruction, operands", [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, %2, %3, 1, 1, 1, 0, 0;",
     '"+r"(d[0]), "+r"(d[1]) : "l"(da), "l"(db)'),  # f16 accumulators
    ("wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5}, %6, %7, 1, 1, 1, 0, 0;",
     '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]) : "l"(da), "l"(db)'),  # N % 8
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, 1, 1, 1;",
     '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db)'),  # tf32 is k8
    ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;",
     '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db)'),  # tf32 takes no transposes
    ("wgmma.mma_async.sync.aligned.m64n8k8.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;",
     '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db)'),  # f16 is k16
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 2, 1, 0, 0;",
     '"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db)'),  # imm-scale-a not +-1
])
def test_unsupported_wgmma_forms_are_named(instruction: str, operands: str) -> None:
    opcode = instruction.split(" ", 1)[0]
    with pytest.raises(UnsupportedFeature, match=rf"not supported on emu: inline PTX assembly \(asm\): "
                                                  rf"{opcode.replace('.', chr(92) + '.')} at k\.cu:2"):
        translate(wgmma_source(instruction, operands), "k.cu")
