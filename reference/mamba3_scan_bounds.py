"""What bounds reference/mamba3_scan.cu and reference/mamba3_scan_backward.cu:
a reference timed beside copies of it with one part of its memory traffic or
of its work taken away, at the official size, rounds interleaved. A copy's
output is wrong by design (it computes on whatever its shared memory holds,
or drops its stores); its time says what that part costs the whole call, and
the copy with every memory part taken away says how long the blocks' own work
takes with nothing to wait for. Each patch replaces text of the reference
that must be there exactly as often as the patch says, so a changed
reference makes this fail rather than time something else.

    python3 reference/mamba3_scan_bounds.py [forward|backward] [--rounds 2] [--ncu] [--only VARIANT ...]
    (on a machine with a GPU; --only: that variant and base, nothing else built or timed)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELPERS = HERE / "phase_stamps.cuh"


@dataclass(frozen=True)
class Edit:
    old: str
    new: str
    count: int = 1  # occurrences of `old` in the reference


@dataclass(frozen=True)
class Patch:
    what: str  # what the copy no longer does, or does instead
    edits: tuple[Edit, ...]
    prelude: str = ""  # device code the edits call: once per copy, in front of the subject's anchor line
    sm_90a: bool = False  # the copy needs the architecture-specific target (wgmma)


def patch(what: str, old: str, new: str, count: int = 1, prelude: str = "") -> Patch:
    return Patch(what, (Edit(old, new, count),), prelude)


# stores only what is never computed, so that the values a dropped store took stay live
KEEP_ALIVE = """__device__ __forceinline__ void keep_alive(float* p, float v) { if (v == 12345.f) *p = v; }
__device__ __forceinline__ void keep_alive(float2* p, float2 v) { if (v.x == 12345.f) *p = v; }
__device__ __forceinline__ void keep_alive(float4* p, float4 v) { if (v.x == 12345.f) *p = v; }
"""
# the look-back's flag test (WORD: the flag word), and as if the chunk next in the walk were
# inclusive at the first read: one round trip of flags, no wait
FLAG_TEST = """const bool ready = valid && (WORD >> 2) == epoch;
const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
const unsigned incl_mask = __ballot_sync(0xffffffffu, ready && (WORD & 3ull) == FLAG_INCLUSIVE);"""
FLAG_TEST_AT_ONCE = """const bool ready = valid && ((WORD >> 2) == epoch || WORD != 1ull);
const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
const bool incl = (WORD & 3ull) == FLAG_INCLUSIVE || lane == 0;
const unsigned incl_mask = __ballot_sync(0xffffffffu, ready && incl);"""
# a matrix descriptor for wgmma: K-major, 128-byte swizzle, 1024 bytes between groups of 8 rows
STAND_IN_DESCRIPTOR = r"""
__device__ __forceinline__ uint64_t stand_in_descriptor(uint32_t start) {
    return (uint64_t)((start & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 | 1ull << 62;
}
"""
# the tensor work of one 64 x 64 x 64 3xTF32 product on wgmma (8 k steps of three m64n32k8 per
# warpgroup, the 128-byte-swizzled K-major layout of reference/tf32_product_probe.cu), its operands
# whatever the first 32 KB of the block's shared memory hold: no split pass, no layout, only the
# tensor pipe's time and the warpgroup's wait for it
WGMMA_STAND_IN = STAND_IN_DESCRIPTOR + r"""
__device__ __forceinline__ void stand_in_m64n32k8(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, 1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(desc_a), "l"(desc_b));
}
__device__ __forceinline__ float wgmma_stand_in(const float* sm) {
    float acc[16] = {};
    const uint32_t base = smem_addr(sm);
    const uint64_t a = stand_in_descriptor(base);
    const uint64_t b = stand_in_descriptor(base + 16384 + __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) * 4096);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < 8; ++s) {
        const uint32_t k = ((s / 4) * 8192 + (s % 4) * 32) / 16;
        stand_in_m64n32k8(acc, a + k, b + k);
        stand_in_m64n32k8(acc, a + k, b + k);
        stand_in_m64n32k8(acc, a + k, b + k);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) sum += acc[i];
    return sum;
}
"""
# the same tensor work with A from registers: per k step, each warp's 16 rows of A loaded from the first
# 16 KB of shared memory as an mma.sync fragment and split (LOP3, FADD), then three m64n32k8 with only B
# through a descriptor. The stand-in above reads 3 KB of operands from shared memory for each 16 clocks
# of tensor math, more than shared memory's 128 bytes a clock give; this reads 1 KB a wgmma and A's
# 2 KB once for three (the wgmma_a_regs of reference/tf32_product_probe.cu)
WGMMA_STAND_IN_A_REGS = STAND_IN_DESCRIPTOR + r"""
__device__ __forceinline__ void stand_in_m64n32k8_a_regs(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, "
                 "1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}
__device__ __forceinline__ float wgmma_stand_in_a_regs(const float* sm) {
    float acc[16] = {};
    const uint64_t b = stand_in_descriptor(smem_addr(sm) + 16384 + __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) * 4096);
    const int lane = threadIdx.x & 31, row = (threadIdx.x / 32 % 4) * 16 + lane / 4, col = lane % 4;
    uint32_t ah[2][4], al[2][4];  // two k steps' fragments: a step's wgmma read them asynchronously
#pragma unroll
    for (int s = 0; s < 8; ++s) {
        const int buf = s % 2;
        if (s >= 2) asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        const float* r = sm + row * 68 + 8 * s + col;
        const float v[4] = {r[0], r[8 * 68], r[4], r[8 * 68 + 4]};
        split(v, ah[buf], al[buf]);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        const uint32_t k = ((s / 4) * 8192 + (s % 4) * 32) / 16;
        stand_in_m64n32k8_a_regs(acc, al[buf], b + k);
        stand_in_m64n32k8_a_regs(acc, ah[buf], b + k);
        stand_in_m64n32k8_a_regs(acc, ah[buf], b + k);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) sum += acc[i];
    return sum;
}
"""
THREE_MMA = """    mma_tf32(d, al, bh);
    mma_tf32(d, ah, bl);
    mma_tf32(d, ah, bh);"""


def flag_test(word: str, indent: str) -> tuple[str, str]:
    """FLAG_TEST and FLAG_TEST_AT_ONCE as a reference writes them."""

    def as_in(text: str) -> str:
        return "\n".join(indent + line for line in text.replace("WORD", word).splitlines())

    return as_in(FLAG_TEST), as_in(FLAG_TEST_AT_ONCE)


def stand_in_products(call: str) -> tuple[Edit, ...]:
    """Edits of the forward that add `call`, a stand-in for a product, to an accumulator of each of its
    four products (the state update, the scores, W X, the read-out) where that product is done."""
    return (
        Edit(
            """                mma3(sacc[q], ah, al, bh2, bl2);
            }
        }
    }
    __syncthreads();
""",
            f"""                mma3(sacc[q], ah, al, bh2, bl2);
            }}
        }}
    }}
    sacc[0][0] += {call};
    __syncthreads();
""",
        ),
        Edit(
            "    // skip x now, while x is in shared memory",
            f"    yacc[0][0][0] += {call};\n    // skip x now, while x is in shared memory",
        ),
        Edit(
            """        const float d_end = v_d[L - 1], co = end_c[my_pair], sn = end_s[my_pair];
        const float w_prev = d_end * bn0;""",
            f"""        agg[0][0] += {call};
        const float d_end = v_d[L - 1], co = end_c[my_pair], sn = end_s[my_pair];
        const float w_prev = d_end * bn0;""",
        ),
        Edit(
            """    each_output_pair([&](int k, int q, int half, int r, int p) {
        if (t0 + r >= seq_len""",
            f"""    yacc[0][0][0] += {call};
    each_output_pair([&](int k, int q, int half, int r, int p) {{
        if (t0 + r >= seq_len""",
        ),
    )


@dataclass(frozen=True)
class Subject:
    reference: Path
    driver: Path
    kernel: str  # ncu's kernel regex
    prelude_anchor: str  # the patches' device code goes in front of this line
    patches: dict[str, Patch]
    variants: dict[str, tuple[str, ...]]


FORWARD_PATCHES = {
    "hot_theta": patch(
        "every block loads the angles of one chunk (b 0, h 0, steps 64..127): L2 hits",
        "__ldg(theta + (size_t)row_of(t) * npairs + pair)",
        "__ldg(theta + (size_t)((L + t_begin + i) * H) * npairs + pair)",
    ),
    "hot_stage": patch(
        "every block stages B, C and x of that same chunk: L2 hits",
        "const long long row_prev = (long long)(b * seq_len + t0 - 1) * H + h;",
        "const long long row_prev = (long long)(L - 1) * H;",
    ),
    "no_stage": patch(
        "B, C and x are not staged (dt and lam are): shared memory keeps what the block before left",
        """        stage_rows<L + 1, NP>(wide & WIDE_N, b_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_B + r * K::SB + n, ok ? B + o : B, ok);
        });
        stage_rows<L, NP>(wide & WIDE_N, c_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, rC + r * K::SB + n, ok ? C + o : C, ok);
        });
        stage_rows<L + 1, PT>(wide & WIDE_P, x_rows, [&](int r, int p, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_X + r * K::SX + p, ok ? x + o : x, ok);
        });
""",
        "        (void)b_rows, (void)c_rows, (void)x_rows;\n",
    ),
    "no_wait": patch(
        "the look-back reads the flags once and takes chunk c-1 as inclusive, set or not",
        *flag_test("st", " " * 20),
    ),
    "no_y": patch(
        "y is not stored",
        "store_pair(y + (size_t)row_of(t0 + r) * P + p0 + p, v, wide & PAIR_Y, p0 + p + 1 < P);",
        "keep_alive(reinterpret_cast<float2*>(y), v);",
        prelude=KEEP_ALIVE,
    ),
    "no_publish": patch(
        "the agg, map and inclusive states are not stored (the look-back reads stale ones)",
        "__stcg(reinterpret_cast<float4*>",
        "keep_alive(reinterpret_cast<float4*>",
        count=3,
        prelude=KEEP_ALIVE,
    ),
    "no_lookback": patch(
        "no look-back at all: no walk, no inclusive state (G from h_in = 0)",
        "    if (c > 0) {\n",
        "    if (c > 0 && false) {\n",
    ),
    "mma_one": patch(
        "each split product is one TF32 mma (ah bh) instead of three; the lo halves go unused",
        THREE_MMA,
        "    mma_tf32(d, ah, bh);",
    ),
    "no_products": patch(
        "no split product at all: the accumulators stay 0, and their fragment loads and splits go too",
        THREE_MMA,
        "    (void)d, (void)ah, (void)al, (void)bh, (void)bl;",
    ),
    "wgmma_products": Patch(
        "each of the four products also runs as 24 wgmma m64n32k8 per warpgroup on whatever shared memory "
        "holds (with no_products: the products' tensor work on wgmma, without their split passes)",
        stand_in_products("wgmma_stand_in(sm)"),
        prelude=WGMMA_STAND_IN,
        sm_90a=True,
    ),
    "wgmma_a_regs_products": Patch(
        "each of the four products also runs as 24 wgmma m64n32k8 per warpgroup with A from registers (loaded "
        "from shared memory and split) and B on whatever shared memory holds",
        stand_in_products("wgmma_stand_in_a_regs(sm)"),
        prelude=WGMMA_STAND_IN_A_REGS,
        sm_90a=True,
    ),
    "stagger": patch(
        "the first wave's blocks start 6 us apart (11,880 clocks at 1.98 GHz) per block of an SM (blocks i, "
        "i + 132, ... share one on 132 SMs), so that the blocks of an SM do not run the same phase at once",
        "    if (tid == 0) {\n        const unsigned long long tickets",
        """    if (tid == 0) {
        if (blockIdx.x < 4 * 132) {
            const long long until = clock64() + (long long)(blockIdx.x / 132) * 6 * 1980;
            while (clock64() < until) {
            }
        }
        const unsigned long long tickets""",
    ),
}
FORWARD_MEMORY_FREE = ("hot_theta", "no_stage", "no_wait", "no_y")
FORWARD_IN_BLOCK = FORWARD_MEMORY_FREE + ("no_publish", "no_lookback")
FORWARD = Subject(
    reference=HERE / "mamba3_scan.cu",
    driver=HERE / "mamba3_scan_bounds.cu",
    kernel="regex:lookback_kernel",
    prelude_anchor="// Four blocks (32 warps) per SM",
    patches=FORWARD_PATCHES,
    variants={
        "base": (),
        "hot_theta": ("hot_theta",),
        "hot_stage": ("hot_theta", "hot_stage"),
        "no_stage": ("hot_theta", "no_stage"),
        "no_wait": ("no_wait",),
        "no_y": ("no_y",),
        "no_publish": ("no_publish",),
        "mma_one": ("mma_one",),
        "memory_free": FORWARD_MEMORY_FREE,
        "memory_free_no_publish": FORWARD_MEMORY_FREE + ("no_publish",),
        "in_block": FORWARD_IN_BLOCK,
        "in_block_mma_one": FORWARD_IN_BLOCK + ("mma_one",),
        "in_block_no_products": FORWARD_IN_BLOCK + ("no_products",),
        "in_block_wgmma": FORWARD_IN_BLOCK + ("no_products", "wgmma_products"),
        "in_block_wgmma_a_regs": FORWARD_IN_BLOCK + ("no_products", "wgmma_a_regs_products"),
        "wgmma": ("no_products", "wgmma_products"),
        "wgmma_a_regs": ("no_products", "wgmma_a_regs_products"),
        "no_products": ("no_products",),
        "memory_free_wgmma_a_regs": FORWARD_MEMORY_FREE + ("no_products", "wgmma_a_regs_products"),
        "stagger": ("stagger",),
        "in_block_stagger": FORWARD_IN_BLOCK + ("stagger",),
        "in_block_no_products_stagger": FORWARD_IN_BLOCK + ("no_products", "stagger"),
        "in_block_wgmma_a_regs_stagger": FORWARD_IN_BLOCK + ("no_products", "wgmma_a_regs_products", "stagger"),
    },
)

# The backward's patches act on its gradient kernel, state_* on its state kernel, mma_one and no_products on
# every product
BACKWARD_MMA = """            mma_tf32(small[q], al, bh);
            mma_tf32(small[q], ah, bl);
            mma_tf32(acc[q], ah, bh);"""
BACKWARD_PATCHES = {
    "grad_only": Patch(
        "the state and carry kernels are not launched: the gradient kernel alone (and the head sums)",
        (
            Edit("        state_kernel<S, S><<<n * nc, THREADS, smem1>>>(pr, n);\n", ""),
            Edit(
                "        carry_kernel<<<(unsigned)((carry_threads + CARRY_THREADS - 1) / CARRY_THREADS), "
                "CARRY_THREADS>>>(pr, n);\n",
                "        (void)carry_threads;\n",
            ),
        ),
    ),
    "no_grad": patch(
        "the gradient kernel is not launched: the state and carry kernels (and the head sums)",
        "        cudaLaunchKernelEx(&cfg, grad_kernel<S, S>, pr, n);\n",
        "",
    ),
    "state_only": Patch(
        "the carry and gradient kernels are not launched: the state kernel alone (and the head sums)",
        (
            Edit(
                "        carry_kernel<<<(unsigned)((carry_threads + CARRY_THREADS - 1) / CARRY_THREADS), "
                "CARRY_THREADS>>>(pr, n);\n",
                "        (void)carry_threads;\n",
            ),
            Edit("        cudaLaunchKernelEx(&cfg, grad_kernel<S, S>, pr, n);\n", ""),
        ),
    ),
    "state_no_stage": patch(
        "the state kernel stages none of x, B, theta (dt and lam it does)",
        """    stage_rows<THREADS, L, PP>(pr.vec_p, RowRange{row0 * P, (long long)H * P, 0, T - t0, P},
                               [&](int r, int p, long long o, bool ok, int w) {
                                   copy_w(w, sX + r * K::SP + p, ok ? pr.x + o : pr.x, ok);
                               });
    stage_rows<THREADS, L, NP>(pr.vec_n, RowRange{row0 * N, (long long)H * N, 0, T - t0, N},
                               [&](int r, int n, long long o, bool ok, int w) {
                                   copy_w(w, sB + r * K::SN + n, ok ? pr.B + o : pr.B, ok);
                               });
    stage_rows<THREADS, L, K::NPP>(pr.vec_i, RowRange{row0 * npairs, (long long)H * npairs, 0, T - t0, npairs},
                                   [&](int r, int i, long long o, bool ok, int w) {
                                       copy_w(w, sTh + r * K::NPP + i, ok ? pr.theta + o : pr.theta, ok);
                                   });
""",
        "    (void)row0;\n",
    ),
    "state_no_publish": Patch(
        "the state kernel stores no R(Phi_end) Agg and no map",
        (
            Edit(
                """        e0.store_cg(mine + (size_t)(2 * i) * P + p);
        e1.store_cg(mine + (size_t)(2 * i + 1) * P + p);""",
                """        if (e0.v[0] == 12345.f) e0.store_cg(mine + (size_t)(2 * i) * P + p);
        if (e1.v[0] == 12345.f) e1.store_cg(mine + (size_t)(2 * i + 1) * P + p);""",
            ),
            Edit("__stcg(pr.maps + slot * npairs + i,", "keep_alive(pr.maps + slot * npairs + i,"),
        ),
        prelude=KEEP_ALIVE,
    ),
    "hot_theta": patch(
        "every gradient block loads the angles of one chunk (b 0, h 0, steps 64..127): L2 hits",
        "__ldg(pr.theta + (size_t)row_of(t) * npairs + pair)",
        "__ldg(pr.theta + (size_t)((L + t_begin + k) * H) * npairs + pair)",
    ),
    "no_stage_inputs": patch(
        "x, dy, B and C are not staged at the block's start (dt, lam and the rows t0-1 are)",
        """    stage_rows<NT, L, PP>(pr.vec_p, x_rows, [&](int r, int p, long long o, bool ok, int w) {
        o = ok ? o : 0;
        copy_w(w, sX + r * K::SP + p, pr.x + o, ok);
        copy_w(w, sDY + r * K::SP + p, pr.dy + o, ok);
    });
    stage_rows<NT, L, NP>(pr.vec_n, RowRange{row0 * N, (long long)H * N, 0, T - t0, N},
                          [&](int r, int n, long long o, bool ok, int w) {
                              o = ok ? o : 0;
                              copy_w(w, sB + r * K::SN + n, pr.B + o, ok);
                              copy_w(w, sC + r * K::SN + n, pr.C + o, ok);
                          });
""",
        "",
    ),
    "no_stage_gin": patch(
        "Gin is not staged (before dCr)",
        """            stage_rows<NT, NP, PP>(pr.vec_p, RowRange{0, P, 0, has_prev ? N : 0, P},
                                   [&](int n, int p, long long o, bool ok, int w) {
                                       copy_w(w, sGin + n * K::SP + p, ok ? src + o : pr.incl1, ok);
                                   });
""",
        "            (void)src, (void)sGin;\n",
    ),
    "no_stage_x_again": patch(
        "x is not staged again (before Gx)",
        """        stage_rows<NT, L, PP>(pr.vec_p, x_rows, [&](int r, int p, long long o, bool ok, int w) {
            copy_w(w, sDY + r * K::SP + p, pr.x + (ok ? o : 0), ok);
        });
""",
        "        (void)x_rows;\n",
    ),
    "no_wait": Patch(
        "no wait for the carry kernel; the look-back reads the flags once and takes chunk c+1 as inclusive",
        (Edit(*flag_test("s", " " * 16)), Edit("    cudaGridDependencySynchronize();\n", "")),
    ),
    "no_outputs": Patch(
        "dx, dB, dC, ddt, dlam and dtheta are not stored",
        (
            Edit(
                "store_pair(pr.dx + (size_t)row_of(t0 + t) * P + p, v, pr.pair_p, p + 1 < P);",
                "keep_alive(reinterpret_cast<float2*>(pr.dx), v);",
            ),
            Edit(
                "store_pair(out + (size_t)row_of(t0 + t) * N + n, v, pr.pair_n, true);",
                "keep_alive(reinterpret_cast<float2*>(out), v);",
            ),
            Edit(
                "pr.ddt[row_of(t0 + t)] = A_h * dloga + lam * dg + (1.f - lam) * abeta;",
                "keep_alive(&pr.ddt[row_of(t0 + t)], A_h * dloga + lam * dg + (1.f - lam) * abeta);",
            ),
            Edit(
                "pr.dlam[row_of(t0 + t)] = d * (dg - abeta);",
                "keep_alive(&pr.dlam[row_of(t0 + t)], d * (dg - abeta));",
            ),
            Edit(
                "pr.dtheta[(size_t)row_of(t0 + t) * npairs + i] = s;",
                "keep_alive(&pr.dtheta[(size_t)row_of(t0 + t) * npairs + i], s);",
            ),
        ),
        prelude=KEEP_ALIVE,
    ),
    "no_publish": Patch(
        "BAgg, the inclusive dGin and the angles Phi_t are not stored (the readers read stale ones)",
        (
            Edit("__stcg(reinterpret_cast<float2*>(out)", "keep_alive(reinterpret_cast<float2*>(out)"),
            Edit(
                """                    b0.store_cg(incl + o0);
                    b1.store_cg(incl + o1);""",
                """                    if (b0.v[0] == 12345.f) b0.store_cg(incl + o0);
                    if (b1.v[0] == 12345.f) b1.store_cg(incl + o1);""",
            ),
            Edit(
                "if (pair < npairs) rot[t * npairs + pair] = make_float2(c, sn);",
                "if (pair < npairs) keep_alive(&rot[t * npairs + pair], make_float2(c, sn));",
            ),
        ),
        prelude=KEEP_ALIVE,
    ),
    "no_lookback": patch(
        "no look-back: no walk, no chunk-end terms, no inclusive dGin (Gfut stays 0)",
        "    if (has_next) {\n        look_back<NT>",
        "    if (has_next && false) {\n        look_back<NT>",
    ),
    "mma_one": patch(
        "each split product is one TF32 mma (ah bh) instead of three, in every kernel",
        BACKWARD_MMA,
        "            mma_tf32(acc[q], ah, bh);",
    ),
    "no_products": patch(
        "no split product at all, in any kernel: their fragment loads and splits go too",
        BACKWARD_MMA,
        "            (void)ah, (void)al, (void)bh, (void)bl;",
    ),
}
BACKWARD_NO_STAGE = ("hot_theta", "no_stage_inputs", "no_stage_gin", "no_stage_x_again")
BACKWARD_MEMORY_FREE = ("grad_only",) + BACKWARD_NO_STAGE + ("no_wait", "no_outputs")
BACKWARD_IN_BLOCK = BACKWARD_MEMORY_FREE + ("no_publish", "no_lookback")
BACKWARD = Subject(
    reference=HERE / "mamba3_scan_backward.cu",
    driver=HERE / "mamba3_scan_backward_bounds.cu",
    kernel="regex:grad_kernel",
    prelude_anchor="// Kernel 1: each chunk's share of the forward carry.",
    patches=BACKWARD_PATCHES,
    variants={
        "base": (),
        "mma_one": ("mma_one",),
        "no_products": ("no_products",),
        "no_grad": ("no_grad",),
        "grad_only": ("grad_only",),
        "grad_hot_theta": ("grad_only", "hot_theta"),
        "grad_no_stage_inputs": ("grad_only", "no_stage_inputs"),
        "grad_no_stage_gin": ("grad_only", "no_stage_gin"),
        "grad_no_stage_x_again": ("grad_only", "no_stage_x_again"),
        "grad_no_stage": ("grad_only",) + BACKWARD_NO_STAGE,
        "grad_no_wait": ("grad_only", "no_wait"),
        "grad_no_outputs": ("grad_only", "no_outputs"),
        "grad_no_publish": ("grad_only", "no_publish"),
        "grad_memory_free": BACKWARD_MEMORY_FREE,
        "grad_in_block": BACKWARD_IN_BLOCK,
        "grad_in_block_mma_one": BACKWARD_IN_BLOCK + ("mma_one",),
        "grad_in_block_no_products": BACKWARD_IN_BLOCK + ("no_products",),
        "state_only": ("state_only",),
        "state_in_block": ("state_only", "state_no_stage", "state_no_publish"),
    },
)
SUBJECTS = {"forward": FORWARD, "backward": BACKWARD}
NCU_METRICS = (
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
)


def patched(subject: Subject, patch_names: tuple[str, ...]) -> str:
    """The reference's text with the named patches applied; ValueError if one does not fit it."""
    source = subject.reference.read_text()
    for name in patch_names:
        for edit in subject.patches[name].edits:
            found = source.count(edit.old)
            if found != edit.count:
                raise ValueError(f"patch {name}: its text is in the reference {found} times, not {edit.count}")
            source = source.replace(edit.old, edit.new)
    preludes = dict.fromkeys(subject.patches[name].prelude for name in patch_names if subject.patches[name].prelude)
    if preludes:
        if source.count(subject.prelude_anchor) != 1:
            raise ValueError(f"the preludes' place, {subject.prelude_anchor!r}, is not once in the reference")
        source = source.replace(subject.prelude_anchor, "".join(preludes) + subject.prelude_anchor)
    return source


def target(subject: Subject, patch_names: tuple[str, ...]) -> str:
    """nvcc's target for a copy: sm_90, or sm_90a alone where a patch uses wgmma."""
    if any(subject.patches[name].sm_90a for name in patch_names):
        return "-gencode=arch=compute_90a,code=sm_90a"
    return "-arch=sm_90"


def build(subject: Subject, name: str, folder: Path) -> Path:
    """The subject's driver built against the variant's copy of the reference, in its own folder."""
    work = folder / name
    work.mkdir()
    (work / subject.reference.name).write_text(patched(subject, subject.variants[name]))
    shutil.copy(subject.driver, work)
    shutil.copy(HELPERS, work)
    binary = work / "bounds"
    source = work / subject.driver.name
    command = ["nvcc", "-O3", target(subject, subject.variants[name]), str(source), "-o", str(binary)]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"variant {name} does not build:\n{built.stderr}")
    return binary


def timed(binary: Path, name: str) -> float:
    """The median of the driver's 80 calls, in us."""
    out = subprocess.run([str(binary), name], check=True, capture_output=True, text=True).stdout.split()
    return float(out[1])


def ncu_line(subject: Subject, binary: Path, name: str) -> str:
    """NCU_METRICS of one launch of the subject's kernel (its sixth), as `metric value unit`."""
    command = ["ncu", "-k", subject.kernel, "--launch-skip", "5", "--launch-count", "1"]
    command += ["--csv", "--metrics", ",".join(NCU_METRICS), str(binary), name]
    out = subprocess.run(command, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 3 and cells[-3] in NCU_METRICS:
            values[cells[-3]] = f"{cells[-1]} {cells[-2]}"
    return "  ".join(f"{metric.split('.')[0]} {values.get(metric, '?')}" for metric in NCU_METRICS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("subject", nargs="?", choices=SUBJECTS, default="forward", help="which reference")
    parser.add_argument("--rounds", type=int, default=2, help="times each variant is timed, in turn")
    parser.add_argument("--ncu", action="store_true", help="also each variant's instructions and issue rate")
    parser.add_argument("--only", action="append", default=[], metavar="VARIANT", help="time this variant and base")
    args = parser.parse_args()
    subject = SUBJECTS[args.subject]
    unknown = [name for name in args.only if name not in subject.variants]
    if unknown:
        parser.error(f"no variant {', '.join(unknown)} of {args.subject}; its variants: {', '.join(subject.variants)}")
    names = [name for name in subject.variants if not args.only or name == "base" or name in args.only]
    with tempfile.TemporaryDirectory(prefix="mamba3-bounds-") as folder:
        with ThreadPoolExecutor() as pool:
            binaries = dict(zip(names, pool.map(lambda name: build(subject, name, Path(folder)), names)))
        medians: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name, binary in binaries.items():
                medians[name].append(timed(binary, name))
        base = statistics.median(medians["base"])
        print(f"{'variant':26} {'median us':>9} {'vs base':>8}  rounds' medians  (patches)")
        for name, values in medians.items():
            median = statistics.median(values)
            rounds = " ".join(f"{v:.1f}" for v in values)
            patches = "; ".join(subject.variants[name]) or "-"
            print(f"{name:26} {median:9.1f} {median - base:+8.1f}  {rounds}  ({patches})")
            if args.ncu:
                print(f"{'':26} {ncu_line(subject, binaries[name], name)}")
        for patch_name in dict.fromkeys(p for name in names for p in subject.variants[name]):
            print(f"  {patch_name}: {subject.patches[patch_name].what}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
