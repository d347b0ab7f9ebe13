"""emu backend: tensor-core code (wmma, inline PTX mma.sync/ldmatrix/cp.async).

The probes of tests/emu_programs/tensor_probes.py are checked against NumPy
and the PTX ISA's fragment tables here, and diffed byte for byte against the
outputs the same probes printed on an H200, kept in tests/emu_programs/expected/
(gpu/emu-tensor.sh writes them).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).parent / "emu_programs"
EXPECTED = PROGRAMS / "expected"
sys.path.insert(0, str(PROGRAMS))
import tensor_probes as tp  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")

TF32_DROPPED = np.uint32(0x1FFF)  # the 13 low mantissa bits a tensor core ignores


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> tp.EmuRunner:
    return tp.EmuRunner(tmp_path_factory.mktemp("emu-tensor"))


def tf32_truncate(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & ~TF32_DROPPED).view(np.float32)


def tf32_round(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 (finite inputs): nearest, ties away from zero."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def operand_values(kind: int, x: np.ndarray) -> np.ndarray:
    """What the tensor core multiplies for float32 data `x` of wmma kind `kind`."""
    if kind == 0:
        return x.astype(np.float16).astype(np.float64)
    if kind == 1:
        return tp.from_bf16_bits(tp.to_bf16_bits(x)).astype(np.float64)
    if kind == 2:
        return tf32_truncate(x).astype(np.float64)
    if kind == 3:
        return tf32_round(x).astype(np.float64)
    return x.astype(np.float64)


def diff_expected(name: str, text: str) -> None:
    """Byte for byte against the H200's output of the same probe (recorded by
    gpu/emu-tensor.sh: NVIDIA H200, driver 580.159.04, nvcc 13.0, sm_90)."""
    expected = EXPECTED / f"{name}.txt"
    assert expected.is_file(), f"no GPU output recorded for probe {name}: run gpu/emu-tensor.sh on a GPU"
    assert text == expected.read_text(), f"emu output of {name} differs from the GPU's ({expected})"


@pytest.mark.parametrize("kind, variant", list(tp.WMMA_VARIANTS))
def test_wmma_exact_gemm_matches_numpy_and_gpu(runner: tp.EmuRunner, kind: int, variant: int) -> None:
    """Every fragment type, shape and layout gives the exact product of small
    integers (so the GPU must print the same bytes)."""
    a, b, c_col = tp.wmma_exact_inputs(kind, variant)
    c = tp.run_wmma_gemm(runner, kind, variant, a, b, c_col)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))
    diff_expected(f"wmma_exact_{tp.WMMA_VARIANTS[kind, variant][0]}", tp.matrix_text(c))


@pytest.mark.parametrize("kind, variant", [(0, 1), (1, 0), (2, 0), (3, 3), (4, 1)])
def test_wmma_random_gemm_rounds_inputs_to_the_operand_type(runner: tp.EmuRunner, kind: int, variant: int) -> None:
    """Random data: the result is the float64 product of the inputs rounded to
    the operand type, up to float32 accumulation (double: to double rounding)."""
    _, tm, tn, tk, _, _ = tp.WMMA_VARIANTS[kind, variant]
    rng = np.random.default_rng(7 + kind)
    m, n, k = 2 * tm, 2 * tn, 8 * tk
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = tp.run_wmma_gemm(runner, kind, variant, a, b, variant % 2 == 1)
    oa, ob = operand_values(kind, a), operand_values(kind, b)
    magnitude = np.abs(oa) @ np.abs(ob)
    ulp = 2.0**-52 if kind == 4 else 2.0**-24
    # one rounding per mma (k / tk of them) plus slack for the sum's own error
    bound = (k // tk + 2) * ulp * magnitude
    assert (np.abs(c - oa @ ob) <= bound).all()
    if kind in (0, 1, 2, 3):  # and the input rounding is visible against the float32 data
        exact = a.astype(np.float64) @ b.astype(np.float64)
        assert np.abs(c - exact).max() > 100 * 2.0**-24 * magnitude.max()


def test_tf32_rounding_raw_truncates_and_float_to_tf32_rounds(runner: tp.EmuRunner) -> None:
    text = tp.tf32_wmma_rounding(runner)
    values = tp.tf32_probe_values().reshape(16, 8)
    assert text == "raw\n" + tp.hex_text(tf32_truncate(values)) + "rna\n" + tp.hex_text(tf32_round(values))
    diff_expected("wmma_tf32_rounding", text)


def test_tf32_gemm_error_is_visible_against_float32(runner: tp.EmuRunner) -> None:
    """A tf32 GEMM of float32 data is ~1e-3 off in relative terms: a tolerance
    written for float32 catches it on emu as on a GPU."""
    rng = np.random.default_rng(11)
    a = rng.uniform(0.5, 1, (32, 64)).astype(np.float32)
    b = rng.uniform(0.5, 1, (64, 32)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    for kind in (2, 3):
        c = tp.run_wmma_gemm(runner, kind, 0 if kind == 2 else 3, a, b, False)
        rel = np.abs(c - exact).max() / np.abs(exact).max()
        assert 1e-5 < rel < 2.0**-10, rel  # well above float32's 6e-8, within tf32's 2^-10


def test_wmma_mma_sync_needs_the_whole_warp(runner: tp.EmuRunner) -> None:
    out = np.zeros(256, np.float32)
    with pytest.raises(RuntimeError, match=r"wmma::mma_sync at tensor_wmma_gemm\.cu:\d+ in kernel half_warp_mma: "
                                           r"needs all 32 lanes of warp 0 in block \(0,0,0\), but lanes 0xffff0000"):
        runner.call("tensor_wmma_gemm.cu", out, out, out, 16, 16, 16, 9, 0, 0)


# ---- mma.sync + ldmatrix + cp.async --------------------------------------------
def mma_operand(kind: int, x: np.ndarray) -> np.ndarray:
    return operand_values({0: 0, 1: 1, 2: 3}[kind], x)  # tf32 through cvt.rna.tf32.f32


@pytest.mark.parametrize("kind", list(tp.MMA_KINDS))
def test_mma_gemm_correct_passes_and_swapped_layout_fails(runner: tp.EmuRunner, kind: int) -> None:
    """The same verdicts as on a GPU: the kernel with the PTX layouts gives the
    exact product; passing A's registers in a swapped order gives a wrong one."""
    a, b = tp.mma_exact_inputs(kind)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    good = tp.run_mma_gemm(runner, kind, a, b)
    np.testing.assert_array_equal(good, exact)
    swapped = tp.run_mma_gemm(runner, kind, a, b, bug=1)
    assert (swapped != exact).mean() > 0.5
    name = tp.MMA_KINDS[kind]
    diff_expected(f"mma_gemm_{name}_correct", tp.matrix_text(good))
    diff_expected(f"mma_gemm_{name}_swapped", tp.matrix_text(swapped))


@pytest.mark.parametrize("kind", list(tp.MMA_KINDS))
def test_mma_gemm_without_cp_async_wait_reads_stale_tiles(runner: tp.EmuRunner, kind: int) -> None:
    a, b = tp.mma_exact_inputs(kind)
    stale = tp.run_mma_gemm(runner, kind, a, b, bug=2)
    assert (stale != a.astype(np.float64) @ b.astype(np.float64)).mean() > 0.5


@pytest.mark.parametrize("kind", list(tp.MMA_KINDS))
def test_mma_random_gemm_rounds_inputs_to_the_operand_type(runner: tp.EmuRunner, kind: int) -> None:
    rng = np.random.default_rng(30 + kind)
    a = rng.uniform(-1, 1, (32, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    c = tp.run_mma_gemm(runner, kind, a, b)
    oa, ob = mma_operand(kind, a), mma_operand(kind, b)
    magnitude = np.abs(oa) @ np.abs(ob)
    steps = 64 // (8 if kind == 2 else 16)
    assert (np.abs(c - oa @ ob) <= (steps + 2) * 2.0**-24 * magnitude).all()
    assert np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max() > 100 * 2.0**-24 * magnitude.max()


def ptx_a_coord(ty: str, k: int, lane: int, i: int) -> tuple[int, int]:
    """PTX ISA, "Matrix Fragments for mma.m16n8k*": element i of lane's A."""
    g, t = lane >> 2, lane % 4
    if ty == "tf32":
        return (g + 8 * i, t) if k == 4 else (g + 8 * (i % 2), t + 4 * (i // 2))
    if k == 8:
        return g + 8 * (i // 2), 2 * t + i % 2
    return g + (8 if i in (2, 3, 6, 7) else 0), 2 * t + i % 2 + (8 if i >= 4 else 0)


def ptx_b_coord(ty: str, k: int, lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    if ty == "tf32":
        return t + 4 * i, g
    return (2 * t + i, g) if k == 8 else (2 * t + i % 2 + (8 if i >= 2 else 0), g)


@pytest.mark.parametrize("variant", list(tp.MMA_LAYOUT_VARIANTS))
def test_mma_fragment_layouts_follow_the_ptx_tables(runner: tp.EmuRunner, variant: int) -> None:
    ty, k = tp.MMA_LAYOUT_VARIANTS[variant]
    a, b, c = tp.mma_layout_inputs(variant)
    # the probe placed element i of each lane by the PTX formulas; the tables
    # here cover every matrix element exactly once
    a_cells = {ptx_a_coord(ty, k, lane, i) for lane in range(32) for i in range(16 * k // 32)}
    b_cells = {ptx_b_coord(ty, k, lane, i) for lane in range(32) for i in range(8 * k // 32)}
    assert len(a_cells) == 16 * k and len(b_cells) == 8 * k
    d = tp.run_mma_layout(runner, variant)
    full = a.astype(np.float64) @ b.astype(np.float64) + c
    for lane in range(32):
        for i in range(4):
            row, col = (lane >> 2) + 8 * (i >> 1), 2 * (lane % 4) + i % 2
            assert d[lane, i] == full[row, col], (lane, i)
    diff_expected(f"mma_layout_{ty}_m16n8k{k}", tp.lane_text(d))


@pytest.mark.parametrize("variant", list(tp.LDMATRIX_VARIANTS))
def test_ldmatrix_fragments_follow_the_ptx_table(runner: tp.EmuRunner, variant: int) -> None:
    name = tp.LDMATRIX_VARIANTS[variant]
    count, trans = int(name[1]), name.endswith("trans")
    got = tp.run_ldmatrix(runner, variant)
    shared_row = lambda m, j: 8 * m + (5 * j) % 8  # noqa: E731  (lane 8m + j's address)
    for lane in range(32):
        for reg in range(4):
            for half in range(2):
                if reg >= count:
                    expect = 0xBEEF if half == 0 else 0xDEAD  # untouched register
                elif trans:
                    expect = shared_row(reg, 2 * (lane % 4) + half) * 8 + lane // 4
                else:
                    expect = shared_row(reg, lane // 4) * 8 + 2 * (lane % 4) + half
                assert got[lane, 2 * reg + half] == expect, (lane, reg, half)
    diff_expected(f"ldmatrix_{name}", tp.lane_text(got))


@pytest.mark.parametrize("n", [1, 127, 128, 1000])
def test_prefetch_hints_change_nothing(runner: tp.EmuRunner, n: int) -> None:
    source = np.arange(n, dtype=np.float32) + 0.25
    _, out = runner.call("prefetch_hints.cu", source, np.zeros(n, np.float32), n)
    np.testing.assert_array_equal(out, source)


def check_global_accesses(runner: tp.Runner, n: int) -> None:
    """tests/emu_programs/global_access.cu moves exactly the bytes its ld/st name."""
    rng = np.random.default_rng(n)
    words = rng.integers(0, 2**63, size=2 * n, dtype=np.uint64)
    values = rng.standard_normal(n).astype(np.float32)
    quads = rng.integers(0, 2**32, size=4 * n, dtype=np.uint64).astype(np.uint32)
    doubles = rng.standard_normal(n)
    got_words, got_values, got_quads, got_doubles = runner.call(
        "global_access.cu", words.copy(), values.copy(), quads.copy(), doubles.copy(), n)
    np.testing.assert_array_equal(got_words, words.reshape(n, 2)[:, ::-1].ravel())
    np.testing.assert_array_equal(got_values, 2 * values)
    q = quads.reshape(n, 4)
    np.testing.assert_array_equal(got_quads.reshape(n, 4), np.stack([q[:, 3], q[:, 2], q[:, 1], q[:, 0]], axis=1))
    np.testing.assert_array_equal(got_doubles, doubles + 1.0)


@pytest.mark.parametrize("n", [1, 63, 64, 200])
def test_ordered_global_accesses_move_the_bytes_they_name(runner: tp.EmuRunner, n: int) -> None:
    check_global_accesses(runner, n)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 200])
def test_ordered_global_accesses_do_the_same_on_the_gpu(tmp_path: Path, n: int) -> None:
    check_global_accesses(tp.CudaRunner(tmp_path), n)


def check_carry_arithmetic(runner: tp.Runner, n: int) -> None:
    """tests/emu_programs/carry_arithmetic.cu: 64-bit sums and differences built
    from add.cc/addc and sub.cc/subc agree with NumPy; the flag after a
    subtraction is the carry of a + ~b + 1 (1 when nothing was borrowed), which
    is what an addc after it adds on an H200; the carry of x + ~key counts the
    words greater than key."""
    rng = np.random.default_rng(n)
    words = rng.integers(0, 2**32, size=4 * n, dtype=np.uint64).astype(np.uint32)
    words[: 2 * n : 7] = 0xFFFFFFFF  # carries and borrows ripple through the high word
    words[2 * n :: 5] = 0
    words[3 * n :] = words[: n]  # equal words: not greater
    sums, diffs, flags = runner.call("carry_arithmetic.cu", words, np.zeros(2 * n, np.uint32),
                                     np.zeros(2 * n, np.uint32), np.zeros(3 * n, np.uint32), n)[1:]
    a = words[: 2 * n].view(np.uint64)
    b = words[2 * n :].view(np.uint64)
    np.testing.assert_array_equal(sums.view(np.uint64), a + b)
    np.testing.assert_array_equal(diffs.view(np.uint64), a - b)
    flags = flags.reshape(n, 3)
    np.testing.assert_array_equal(flags[:, 0], (a.astype(object) + b.astype(object) >= 2**64).astype(np.uint32))
    np.testing.assert_array_equal(flags[:, 1], (a >= b).astype(np.uint32))
    np.testing.assert_array_equal(flags[:, 2], (words[None, :] > words[:n, None]).sum(1).astype(np.uint32))


@pytest.mark.parametrize("n", [1, 37, 200])
def test_carry_arithmetic_follows_the_ptx_isa(runner: tp.EmuRunner, n: int) -> None:
    check_carry_arithmetic(runner, n)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 200])
def test_carry_arithmetic_does_the_same_on_the_gpu(tmp_path: Path, n: int) -> None:
    check_carry_arithmetic(tp.CudaRunner(tmp_path), n)


def check_dependent_launches(runner: tp.Runner, n: int) -> None:
    """tests/emu_programs/dependent_launch.cu: kernels launched by
    cudaLaunchKernelEx with programmatic stream serialization see the writes of
    the kernel before once they have waited (the runtime call or the PTX)."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    empty = [np.full(n, np.nan, np.float32) for _ in range(4)]
    out, result, out2, result2 = runner.call("dependent_launch.cu", a, b, *empty, n)[2:]
    np.testing.assert_array_equal(out, 2 * a)
    np.testing.assert_array_equal(result, 2 * a + b)
    np.testing.assert_array_equal(out2, 2 * a)
    np.testing.assert_array_equal(result2, 2 * a + b)


@pytest.mark.parametrize("n", [1, 129, 1000])
def test_dependent_launches_see_the_kernel_before(runner: tp.EmuRunner, n: int) -> None:
    check_dependent_launches(runner, n)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 100000])
def test_dependent_launches_do_the_same_on_the_gpu(tmp_path: Path, n: int) -> None:
    check_dependent_launches(tp.CudaRunner(tmp_path), n)


def test_cp_async_groups_complete_at_their_wait(runner: tp.EmuRunner) -> None:
    out, early, mid = tp.run_cp_async(runner)
    src = tp.cp_async_source().reshape(5, 32, 4)
    expect = src.copy()
    stage2 = np.zeros((32, 16), np.uint8)  # cg with src_size = lane % 17: the rest zero-filled
    for lane in range(32):
        n = lane % 17
        stage2[lane, :n] = src[2, lane].view(np.uint8)[:n]
    expect[2] = stage2.view(np.float32)
    expect[4, 1::2, 2:] = 0  # __pipeline_memcpy_async with zfill 8 on odd lanes
    np.testing.assert_array_equal(out, expect)
    np.testing.assert_array_equal(early, -1)  # nothing lands before a wait
    np.testing.assert_array_equal(mid[0], src[0])  # wait_group 3: only the oldest of four groups
    np.testing.assert_array_equal(mid[1:], -1)
    diff_expected("cp_async_groups", tp.cp_async_probe(runner))


@pytest.mark.parametrize("mode, message", [
    (0, r"ldmatrix\.sync\.aligned\.m8n8 \(inline PTX\) at tensor_misuse\.cu:\d+: operand 0x[0-9a-f]+ is not a "
        r"shared-state address"),
    (1, r"wmma::load_matrix_sync at tensor_misuse\.cu:\d+ in kernel misuse: the pointer \(0x[0-9a-f]+\) must be "
        r"256-bit aligned"),
    (2, r"cp\.async\.ca \(inline PTX\) at tensor_misuse\.cu:\d+ in kernel misuse: addresses .* must be aligned to "
        r"the copy size 8"),
    (3, r"cp\.async\.bulk\.prefetch\.L2 \(inline PTX\) at tensor_misuse\.cu:\d+ in kernel misuse: the address "
        r"0x[0-9a-f]+ must be 16-byte aligned and the size 64 a multiple of 16"),
    (4, r"ld\.volatile\.global\.v2\.u64 \(inline PTX\) at tensor_misuse\.cu:\d+ in kernel misuse: the address "
        r"0x[0-9a-f]+ must be 16-byte aligned"),
])
def test_tensor_misuse_is_reported(runner: tp.EmuRunner, mode: int, message: str) -> None:
    g = np.zeros(256, np.float16)
    with pytest.raises(RuntimeError, match=message):
        runner.call("tensor_misuse.cu", g, np.zeros(32, np.float32), mode)
