// mamba3_scan_backward reference: chunked (SSD-style) on tensor cores with split-precision (3xTF32)
// products; the adjoint carry between chunks passed by a decoupled look-back, the forward carry by
// a kernel of its own (H100, `harness bench`: 406.4 us against 409.1 us with Gin and the second x
// staged after the dx and dC stores instead of in flight under them (notes, "What bounds this design");
// 409.6 us against 420.6 us with the staging's indices
// computed afresh per copy (notes, "Staging by fixed column groups"); 419.4 us against 422.0 us
// with its flags behind sequentially consistent fences (notes, "Release and acquire flags");
// 418.4 us against 426.7 us
// with the angles' accurate sincosf (notes, "Sincos by the MUFU, timed and landed"; timed before
// angles past 2^17 went to sincosf); 430.8 us against 450.9 us for the file before its
// forward carry became a kernel of its own (notes, "The forward carry as a kernel of its own");
// 442.5 us against 457.5 us for the file before one fence per publication (notes, "One fence per
// publication"); H200: 442 us against 496 us for the file before four tiles per warp in its
// products (notes, "Four tiles per warp, landed"); 498 us against 512 us for the file before its epilogues' row sums
// without shared-memory atomics, its turns loaded before their products, its paired stores and its
// decays as one ex2 (notes, "Where the gradient kernel's instructions go"); 505 us against 533 us
// for the file before the gradient kernel was launched as the state kernel's programmatic dependent
// (notes, "The gradient kernel as the state kernel's programmatic dependent"); 534 us against 593 us for the file before its gradient kernel ran
// two blocks of 8 warps per SM (notes, "Two blocks per SM for the gradient kernel"); 612 us against
// 693 us for the file before its running rotation
// without bank conflicts (notes, "Where a block's time goes"); earlier 673 us against 685 us for
// the file before its Agg as a transpose in
// the same run; 700 against 713 us in an earlier run for the 16-byte element loops; 699 against
// 753 us for the batched running rotation and the windowed look-back; 1.60 ms before the gradient
// kernel's 16 warps, warp-summed atomics, 16-byte staging and tile pairs: notes, "Atomics, warps,
// staging and tile pairs" and the sections after it; solutions/mamba3_scan_backward/chunked_3xtf32.cu
// 1.88 ms and the step-by-step segment_parallel_carries.cu, the reference before, 2.85 ms in an
// earlier run).
//
// The algorithm is that of solutions/mamba3_scan_backward/chunked_3xtf32.cu (derived and checked in float64 by
// reference/mamba3_scan_backward_chunked.py): per chunk of L = 64 steps, with angles from the
// chunk start (Bg = R(-Phi) B, Cr = R(-Phi) C), cl_t = sum_{r<=t} dt_r A, dec_t = exp(cl_t),
// decend_t = exp(cl_end - cl_t), e_t = gamma_t + bn_{t+1}:
//   forward carry:  Gin(c+1) = R(Phi_end) Agg_c + dec_end R(Phi_end) Gin(c),  Agg_c = sum_s decend_s e_s Bg_s x_s^T
//   adjoint carry:  dGin(c)  = BAgg_c + dec_end R(-Phi_end) dGin(c+1),        BAgg_c = sum_s dec_s Cr_s dy_s^T
//   gradients of chunk c from Gin(c), Gfut(c) = R(-Phi_end) dGin(c+1) and five products.
// Both carries are affine maps of the same kind (one decay and one rotation per row pair), so
// each is a scan over chunks. The two run in opposite directions, and a block waiting on both
// could wait on a block that never starts; so the forward carry is done first, in two launches:
//   1. state kernel: one block per chunk; reads only the state side (x, B, theta, dt, lam),
//      forms R(Phi_end) Agg_c and publishes it with the chunk's map (dec_end, Phi_end).
//   2. carry kernel: one thread per (head, row pair, column) folds the chain of its head's chunks
//      in order, the next chunks' loads in flight, and stores every Gin(c+1). The carry streams
//      the aggregates once (about 22 us on an H100 at the official size); a decoupled look-back in
//      kernel 1 held each block 8.4 of its 18 us and kept the kernel twice as long (notes, "The
//      forward carry as a kernel of its own").
//   3. gradient kernel: tickets in descending chunk order; forms BAgg_c first and publishes it,
//      then the L x L products, then looks back over later chunks for dGin(c+1) (the maps come
//      from kernel 1), publishes the inclusive dGin(c), and forms every gradient with Gin(c)
//      (kernel 2's Gin of chunk c-1) and Gfut(c) staged in shared memory.
//   4. dA and dskip per head from per-chunk shares, in a fixed order.
// Kernel 3 is launched as kernel 2's programmatic dependent: once every block of kernel 2 has
// started, kernel 3's blocks may start, and each runs its first phases (staging, BAgg, Q and D),
// which read only inputs, before it waits for kernel 2 to finish (cudaGridDependencySynchronize).
// Kernel 1 reads about half the inputs' bytes; the previous design's separate aggregate kernel
// read every input.
//
// Look-back protocol of kernel 3 (as reference/mamba3_scan.cu): a block draws a
// ticket from an atomic counter (blocks start in no particular order), tickets run chunk-major,
// so a block only waits on blocks with smaller tickets, which already run: no deadlock for any
// grid. Data is written by every thread; after a barrier thread 0 alone sets the flag with a
// release store, so the other warps go on (the pattern of a grid barrier: the barrier orders the
// block's stores before thread 0's release); a flag word is 64-bit, epoch << 2 | flag, so words of earlier launches
// read as "not ready" and nothing is cleared between calls; the block drawing the last ticket
// resets the counter. A waiting block's warp 0 reads its predecessors' flags 8 at a time with
// acquire loads, before the barrier after which every thread loads their data; it folds in each one's
// aggregate through the composed maps until it meets an inclusive value (look_back); the running
// sums and composed maps live in shared memory, so any state size works with one code path.
//
// Precision. Every product is 3xTF32 (a = hi + lo, hi truncated to tf32, three mma.sync m16n8k8
// per tile step, float32 accumulation); the prefix sums of dt A are kept in double (their
// differences cancel at fast decay); the carries are plain FP32. A float atomicAdd on shared
// memory is a compare-and-swap loop (ATOMS.CAST.SPIN), which a whole block hitting one word turns
// into hundreds of retries: the epilogues' per-step sums go through per-column-group partials added
// in a fixed order, and the chunk end's few per-pair and per-chunk sums use one atomic per warp, so
// their order varies; the tolerances allow any.
//
// Sizes. d_state and head_dim are padded to S = 16, 32, 64 or 128 (zero rows and columns) in
// shared memory, but products stop at the real sizes. Steps past seq_len have dt = 0 and zero
// inputs (no decay, no write) and are not stored. At S = 128 Gin and Gfut stay in global memory
// (shared memory is full). The scratch (four N x P matrices, a map and the angles Phi_t per chunk)
// is capped at 256 MB; larger problems run the two kernels over groups of (b, h) heads.
//
// Compile-time switch: GRAD_WARPS [16], the gradient kernel's warps per block at S = 128, where it
// runs one block per SM (8 or 16; notes, "Atomics, warps, staging and tile pairs": 16 took 12 % off
// the time when every size ran one block per SM).

#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <type_traits>

// PHASE_AT(k, t): a timestamp of phase k taken by thread t, for
// reference/mamba3_scan_backward_phases.cu, which defines it (reference/phase_stamps.cuh);
// nothing in a normal build. The gradient kernel stamps slots 0 to 10, the state kernel 11 to 14.
#ifndef PHASE_AT
#define PHASE_AT(k, t)
#endif

namespace {

constexpr int L = 64;  // chunk length (time steps)
constexpr int WARPS = 8;
constexpr int THREADS = 32 * WARPS;  // the state kernel's block (the gradient kernel's: Cfg2)
#ifndef GRAD_WARPS
#define GRAD_WARPS 16
#endif
constexpr int SL = L + 4;  // row stride of the L x L matrices and per-step vectors
constexpr unsigned long long FLAG_AGGREGATE = 1ull, FLAG_INCLUSIVE = 2ull;
constexpr size_t SCRATCH_CAP = size_t(256) << 20;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 4 bytes global -> shared without a register round trip; zero-filled when !valid
__device__ __forceinline__ void copy4(float* dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 4 : 0));
}
// 16 bytes global -> shared (L2 only); zero-filled when !valid. Both addresses 16-byte aligned.
__device__ __forceinline__ void copy16(float* dst, const float* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_w(int w, float* dst, const float* src, bool valid) {
    if (w == 4)
        copy16(dst, src, valid);
    else
        copy4(dst, src, valid);
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }
// Rows r = 0 .. ROWS-1 of a tile staged from global memory: row r is at offset first + r * step
// floats (for a tensor in the (b, t, h) layout, step = H times the row's width), valid for
// lo <= r < hi and columns below `cols`.
struct RowRange {
    long long first, step;
    int lo, hi, cols;
};
// ROWS rows of COLS (padded) columns by NT threads: copy(r, c, offset, ok, w) stages columns
// c .. c + w - 1 of row r, w = 4 (one 16-byte copy) when `wide`, else w = 1; ok: in range. When
// `wide`, a row's valid columns are a multiple of 4, so a 16-byte group is all in range or all out,
// and the shared row strides are multiples of 4 floats. Each thread keeps one column group and steps
// its rows by NT / (COLS / w), its offset by one 64-bit add a copy: with the row and column computed
// afresh from a flat index each 16-byte copy cost about thirty instructions (SASS).
template <int NT, int ROWS, int COLS, int W, class Copy>
__device__ __forceinline__ void stage_rows_w(const RowRange& rows, Copy copy) {
    constexpr int GROUPS = COLS / W, RSTEP = NT / GROUPS;
    static_assert(COLS % W == 0 && NT % GROUPS == 0, "a fixed column group per thread");
    const int col = W * (threadIdx.x % GROUPS), r0 = threadIdx.x / GROUPS;
    const bool col_ok = col < rows.cols;
    long long off = rows.first + r0 * rows.step + col;
#pragma unroll
    for (int i = 0; i < (ROWS + RSTEP - 1) / RSTEP; ++i) {
        const int r = r0 + RSTEP * i;
        if (ROWS % RSTEP == 0 || r < ROWS) copy(r, col, off, col_ok && r >= rows.lo && r < rows.hi, W);
        off += RSTEP * rows.step;
    }
}
template <int NT, int ROWS, int COLS, class Copy>
__device__ __forceinline__ void stage_rows(bool wide, const RowRange& rows, Copy copy) {
    static_assert(COLS % 4 == 0, "whole 16-byte groups");
    if (wide)
        stage_rows_w<NT, ROWS, COLS, 4>(rows, copy);
    else
        stage_rows_w<NT, ROWS, COLS, 1>(rows, copy);
}

// A flag is read with acquire and set with release (GPU scope): a block's data stores, then a barrier,
// then thread 0's release store; a reader lane's acquire load, then a barrier, then every thread's
// data loads. The barriers carry the order to the other threads of either block.
__device__ __forceinline__ unsigned long long read_status(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.b64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void set_status(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.gpu.global.b64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}

// v = hi + lo: hi is v with the 13 mantissa bits a tensor core ignores cleared (truncation, one
// LOP3), lo = v - hi is exact and goes in as it is (the tensor core reads its upper 19 bits).
// Rounding both halves with cvt.rna cost about ten instructions per element; truncation leaves at
// most 2^-20 |v| out of a product's operand instead of 2^-22, far inside the tolerance (notes).
__device__ __forceinline__ void split(float v, uint32_t& hi, uint32_t& lo) {
    hi = __float_as_uint(v) & 0xffffe000u;
    lo = __float_as_uint(v - __uint_as_float(hi));
}
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// f / P for the element loops over (row pair, column): P is a runtime size, and an integer division
// by it compiles to about twenty instructions; with pdiv = ceil(2^31 / P) (Problem::pdiv) one
// multiply-high is exact for f < 2^16 (f * (pdiv * P - 2^31) < 2^23 < 2^31).
// 2^x in one MUFU instruction (relative error about 2^-22); expf is ten instructions and runs once per
// element of Dec Q and Dec D
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// v.x at out[0] and, when has_second, v.y at out[1]: one 8-byte store when `paired` (out 8-byte aligned)
__device__ __forceinline__ void store_pair(float* out, float2 v, bool paired, bool has_second) {
    if (paired) {
        *reinterpret_cast<float2*>(out) = v;
    } else {
        out[0] = v.x;
        if (has_second) out[1] = v.y;
    }
}
__device__ __forceinline__ int div_p(int f, unsigned pdiv) { return (int)__umulhi(2u * (unsigned)f, pdiv); }
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// acc[q] (the 16 x 8 tile at rows m0, columns n0 + 8q) += sum over k in [k_lo, k_hi) of a_at(m, k) b_at(k, n)
// for q < NTL: one A fragment (loads, scale factors, split) serves NTL tiles side by side.
// Fragment coordinates of m16n8k8: a rows g, g+8 and columns tg, tg+4; b rows tg, tg+4, column g.
// The two small 3xTF32 terms go to their own accumulators, added at the end: a k step then waits on
// two dependent mma instead of three.
template <int NTL, class FA, class FB>
__device__ __forceinline__ void mma_tiles(float (&acc)[NTL][4], int m0, int n0, int k_lo, int k_hi, FA a_at, FB b_at) {
    const int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    float small[NTL][4] = {};
    for (int k0 = k_lo; k0 < k_hi; k0 += 8) {
        const float a[4] = {a_at(m0 + g, k0 + tg), a_at(m0 + g + 8, k0 + tg), a_at(m0 + g, k0 + tg + 4),
                            a_at(m0 + g + 8, k0 + tg + 4)};
        uint32_t ah[4], al[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) split(a[i], ah[i], al[i]);
#pragma unroll
        for (int q = 0; q < NTL; ++q) {
            const float b[2] = {b_at(k0 + tg, n0 + 8 * q + g), b_at(k0 + tg + 4, n0 + 8 * q + g)};
            uint32_t bh[2], bl[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) split(b[i], bh[i], bl[i]);
            mma_tf32(small[q], al, bh);
            mma_tf32(small[q], ah, bl);
            mma_tf32(acc[q], ah, bh);
        }
    }
#pragma unroll
    for (int q = 0; q < NTL; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[q][i] += small[q][i];
}
template <class FA, class FB>
__device__ __forceinline__ void mma_range(float (&acc)[4], int m0, int n0, int k_lo, int k_hi, FA a_at, FB b_at) {
    mma_tiles<1>(reinterpret_cast<float(&)[1][4]>(acc), m0, n0, k_lo, k_hi, a_at, b_at);
}

// body(jj, m0, n0) for a warp's share of an output's groups of TPAIR side-by-side 16 x 8 tiles: group
// j = warp + jj NW has rows from m0 = 16 (j / GT) and columns from n0 = 8 TPAIR (j % GT); a group that
// starts at or past row `rows` or column `cols` is skipped by the whole warp, so that the shuffles of
// the epilogues stay converged
template <int ROW_BLOCKS, int GT, int NW, int TPAIR, class Body>
__device__ __forceinline__ void each_tile_group(int warp, int rows, int cols, Body&& body) {
    constexpr int GROUPS = ROW_BLOCKS * GT;
#pragma unroll
    for (int jj = 0; jj < (GROUPS + NW - 1) / NW; ++jj) {
        const int j = warp + jj * NW, m0 = (j / GT) * 16, n0 = (j % GT) * 8 * TPAIR;
        if (j < GROUPS && m0 < rows && n0 < cols) body(jj, m0, n0);
    }
}
// The lower-triangle 16 x 8 tiles of an L x L matrix: 20 of them, s -> (row block, column tile).
__device__ __forceinline__ void tri_tile(int s, int& rb, int& ct) {
    rb = s < 2 ? 0 : s < 6 ? 1 : s < 12 ? 2 : 3;
    ct = s - rb * (rb + 1);
}


// sin and cos of an angle past the reduction's range (below): sincosf, out of line, so that its
// slow path's registers and stack stay off the common path; returned by value, not through
// pointers, which would keep the common path's results in local memory
__device__ __noinline__ float2 sincos_far(float x) {
    float s, c;
    sincosf(x, &s, &c);
    return make_float2(s, c);
}
// sin and cos of an angle in a few instructions: reduced to [-pi, pi] by two FMAs with 2 pi split
// in two floats, then the MUFU's sin and cos (absolute error about 2^-21.4 there), where sincosf's
// accurate path costs about thirty instructions. The split 2 pi is 6.9e-15 rad short, so the
// reduction errs by that much per turn it removes (|x| / 2 pi of them), always the same way: 1.4e-10
// rad at |x| = 2^17, past which sincosf takes over (notes, "Sincos by the MUFU")
__device__ __forceinline__ void sincos_turn(float x, float* s, float* c) {
    if (fabsf(x) > 0x1p17f) {
        const float2 v = sincos_far(x);
        *s = v.x;
        *c = v.y;
        return;
    }
    const float k = rintf(x * 0.159154943091895336f);
    float r = fmaf(-k, 6.28318548202514648f, x);
    r = fmaf(-k, -1.74845553146951e-7f, r);
    __sincosf(r, s, c);
}
struct Problem {
    const float *x, *B, *C, *dt, *A, *lam, *theta, *skip, *dy;
    float *dx, *dB, *dC, *ddt, *dlam, *dtheta;
    int T, H, P, N, nc;
    unsigned pdiv;              // ceil(2^31 / P): div_p
    // rows of P (x, dy), N (B, C) or N/2 (theta) floats staged with 16-byte copies (a multiple of 4
    // floats, 16-byte aligned arrays); else 4-byte ones. Each copy costs its own address arithmetic
    // (a 64-bit (b, t, h) row offset), so the wide ones take a quarter of the instructions.
    bool vec_p, vec_n, vec_i;
    bool pair_p, pair_n;        // dx (P even), dB and dC 8-byte aligned: a column pair in one 8-byte store
    int bh0;                    // first (b, h) head of this group
    float* agg1;                // per (head in group, chunk): R(Phi_end) Agg_c           [N][P]
    float* incl1;               // per (head in group, chunk): Gin(c+1)                   [N][P]
    float* agg2;                // per (head in group, chunk): BAgg_c                     [N][P]
    float* incl2;               // per (head in group, chunk): dGin(c)                    [N][P]
    float* gfut;                // per (head in group, chunk): Gfut(c), only at S = 128  [N][P]
    float2* rot;                // per (head in group, chunk, step, pair): cos, sin of Phi_t (gradient kernel)
    float4* maps;               // per (head in group, chunk, pair): dec_end, cos, sin of Phi_end, 0
    unsigned long long* status;   // the gradient kernel's flag word per (head in group, chunk)
    unsigned long long* counter;  // its tickets
    float* partial;             // per (b, h, chunk) of the whole problem: dA share, dskip share
    unsigned long long epoch;
};

// The rotation of the segments before a thread's own (segment q's total: total_of(q)), composed
// in order and brought back to unit length: a composed rotation's length drifts with its depth.
template <class TotalOf>
__device__ __forceinline__ float2 offset_of_earlier(int part, TotalOf total_of) {
    float oc = 1.f, os = 0.f;
    for (int q = 0; q < part; ++q) {
        const float2 cs = total_of(q);
        const float nc = oc * cs.x - os * cs.y, ns = oc * cs.y + os * cs.x;
        oc = nc;
        os = ns;
    }
    const float r = rsqrtf(oc * oc + os * os);
    return make_float2(oc * r, os * r);
}

// Angles from the chunk start: rot [L][NPP] holds (cos, sin) of theta_t on entry and of
// Phi_t = theta_0 + ... + theta_t on exit; the rows of m1 (and m2 unless null), stride `stride`,
// are turned by R(-Phi_t). The NT / NPP threads of a pair each take a segment of consecutive steps,
// the pairs side by side in a warp (pair = tid % NPP), so that a warp's accesses to one step's row
// are consecutive words: with a pair's segments on consecutive lanes instead, the lanes of a warp
// read rows 4 or 8 steps apart, whose strides (64, 68 floats) put them in the same banks, and the
// setup (this, the decays and the angles' sincos) took 4.6 of the gradient kernel's 30.8 us per
// block, 1.7 us now (reference/mamba3_scan_backward_phases.cu). Three passes, rotations commuting:
// each segment's running product in place; each thread composes the totals of the segments before
// its own (their last steps); then every step takes that offset and its rows are turned.
template <int NPP, int NT>
__device__ __forceinline__ void running_rotation(float* rot, float* m1, float* m2, int stride) {
    constexpr int TPP = NT / NPP, SEG = L / TPP;
    static_assert(NT % NPP == 0 && L % TPP == 0, "whole segments of steps per thread");
    const int pair = threadIdx.x % NPP, part = threadIdx.x / NPP, t_begin = part * SEG;
    float2* rot2 = reinterpret_cast<float2*>(rot);
    float pc = 1.f, ps = 0.f;
#pragma unroll
    for (int k = 0; k < SEG; ++k) {
        float2& r = rot2[(t_begin + k) * NPP + pair];
        const float2 cs = r;
        const float nc = pc * cs.x - ps * cs.y, ns = pc * cs.y + ps * cs.x;
        pc = nc;
        ps = ns;
        r = make_float2(pc, ps);
    }
    __syncthreads();
    const float2 off = offset_of_earlier(part, [&](int q) { return rot2[(q * SEG + SEG - 1) * NPP + pair]; });
    const float oc = off.x, os = off.y;
    __syncthreads();  // every segment's total read before the offsets change them
    // The rows a batch of steps at a time, every load of the batch before its stores: the compiler
    // cannot tell rot from m1 and m2 apart, and as one loop each step's loads waited behind the
    // previous step's stores (17 % of the gradient kernel's stall samples under Nsight Compute).
    constexpr int BATCH = SEG < 4 ? SEG : 4;
#pragma unroll 1
    for (int k0 = 0; k0 < SEG; k0 += BATCH) {
        float2 cs[BATCH], r1[BATCH], r2[BATCH];
#pragma unroll
        for (int k = 0; k < BATCH; ++k) {
            const int t = t_begin + k0 + k;
            cs[k] = rot2[t * NPP + pair];
            r1[k] = *reinterpret_cast<const float2*>(m1 + t * stride + 2 * pair);
            if (m2) r2[k] = *reinterpret_cast<const float2*>(m2 + t * stride + 2 * pair);
        }
#pragma unroll
        for (int k = 0; k < BATCH; ++k) {
            const int t = t_begin + k0 + k;
            const float c = oc * cs[k].x - os * cs[k].y, s = oc * cs[k].y + os * cs[k].x;
            rot2[t * NPP + pair] = make_float2(c, s);
            *reinterpret_cast<float2*>(m1 + t * stride + 2 * pair) =
                make_float2(c * r1[k].x + s * r1[k].y, c * r1[k].y - s * r1[k].x);
            if (m2)
                *reinterpret_cast<float2*>(m2 + t * stride + 2 * pair) =
                    make_float2(c * r2[k].x + s * r2[k].y, c * r2[k].y - s * r2[k].x);
        }
    }
}

// Prefix sums of dt A over the chunk in double (warp 0): cl_t for the lane's two steps and cl_end.
__device__ __forceinline__ void decay_prefix(const float* v_dt, float A_h, double (&cl)[2], double& cl_end) {
    const int lane = threadIdx.x & 31;
    double s0 = (double)v_dt[lane] * A_h, s1 = (double)v_dt[lane + 32] * A_h;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const double u0 = __shfl_up_sync(0xffffffffu, s0, o), u1 = __shfl_up_sync(0xffffffffu, s1, o);
        if (lane >= o) {
            s0 += u0;
            s1 += u1;
        }
    }
    s1 += __shfl_sync(0xffffffffu, s0, 31);
    cl_end = __shfl_sync(0xffffffffu, s1, 31);
    cl[0] = s0;
    cl[1] = s1;
}

// Draws this block's ticket (thread 0; the last ticket resets the counter for the next launch).
__device__ __forceinline__ int draw_ticket(unsigned long long* counter, unsigned long long tickets, unsigned* cell) {
    if (threadIdx.x == 0) {
        const unsigned long long ticket = atomicAdd(counter, 1ull);
        if (ticket == tickets - 1) atomicExch(counter, 0ull);
        *cell = (unsigned)ticket;
    }
    __syncthreads();
    return (int)*cell;
}

// Decoupled look-back over the later chunks j = first, first + 1, ... of one head (slots slot0 + j),
// LB_WIN chunks at a time: acc[2i][p], acc[2i+1][p] (row stride ld) += each chunk's value turned by
// the composed maps of the chunks before it in the walk (a map is dec_end R(-Phi_end)), the value
// being the chunk's inclusive one if flagged (then the walk ends) or else its aggregate. Chunk
// `last` only ever publishes an inclusive value.
//
// A window: warp 0's lanes read the flags of LB_WIN chunks at once and wait until the flags up to
// the first inclusive one are all set (or all LB_WIN are aggregates); the pairs' threads compose the
// window's maps (every map load in flight at once); every thread then folds all of the window's
// chunks into its elements, every load issued before the adds. One chunk at a time, each chunk
// cost a flag round trip, two barriers, a data round trip and a map round trip in turn (3.3 chunks
// per walk on average at the official size: the state kernel's look-back was 16 % of its stall
// samples under Nsight Compute). The walk ends with a barrier: any thread may then read any element.
constexpr int LB_WIN = 8;
template <int W>  // W consecutive columns: one 16-byte access when W = 4
struct Cols {
    float v[W];
    __device__ __forceinline__ void load_cg(const float* p) {
        if constexpr (W == 4) {
            const float4 q = __ldcg(reinterpret_cast<const float4*>(p));
            v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
        } else {
            v[0] = __ldcg(p);
        }
    }
    __device__ __forceinline__ void load(const float* p) {
        if constexpr (W == 4) {
            const float4 q = *reinterpret_cast<const float4*>(p);
            v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
        } else {
            v[0] = *p;
        }
    }
    __device__ __forceinline__ void store(float* p) const {
        if constexpr (W == 4)
            *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
        else
            *p = v[0];
    }
    __device__ __forceinline__ void store_cg(float* p) const {
        if constexpr (W == 4)
            __stcg(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
        else
            __stcg(p, v[0]);
    }
};
// fn(width) with width = std::integral_constant<int, W>: W = 4 columns at a time (16-byte accesses)
// when P % 4 == 0, which the callers' layouts align; else W = 1.
template <class Fn>
__device__ __forceinline__ void with_column_width(int P, Fn fn) {
    if (P % 4 == 0)
        fn(std::integral_constant<int, 4>());
    else
        fn(std::integral_constant<int, 1>());
}
// The element loops over (row pair i, column p) of an N x P matrix: body(i, p, width) for the groups of
// W = width consecutive columns f = tid + k NT (W f = i P + p). One column at a time, each element
// cost its own index arithmetic, and a thread's elements went one round trip after another.
template <int NT, class Body>
__device__ __forceinline__ void for_pair_columns(int npairs, int P, unsigned pdiv, Body body) {
    with_column_width(P, [&](auto width) {
        constexpr int W = decltype(width)::value;
        for (int f = threadIdx.x; f < npairs * (P / W); f += NT) {
            const int i = div_p(W * f, pdiv);
            body(i, W * f - i * P, width);
        }
    });
}
// One window's fold: the chunks in batches of LB_BATCH, every load of a batch issued before its
// adds (registers bound the batch).
constexpr int LB_BATCH = 4;
template <int NT, class Src>
__device__ __forceinline__ void fold_window(float* acc, int ld, const float4* cmap, Src src, int depth, int npairs,
                                            int P, unsigned pdiv) {
    for_pair_columns<NT>(npairs, P, pdiv, [&](int i, int p, auto width) {
        constexpr int W = decltype(width)::value;
        Cols<W> a0, a1;
        a0.load(acc + (2 * i) * ld + p);
        a1.load(acc + (2 * i + 1) * ld + p);
#pragma unroll 1
        for (int k0 = 0; k0 < depth; k0 += LB_BATCH) {
            Cols<W> v0[LB_BATCH], v1[LB_BATCH];
#pragma unroll
            for (int k = 0; k < LB_BATCH; ++k)
                if (k0 + k < depth) {
                    const float* m = src(k0 + k);
                    v0[k].load_cg(m + (size_t)(2 * i) * P + p);
                    v1[k].load_cg(m + (size_t)(2 * i + 1) * P + p);
                }
#pragma unroll
            for (int k = 0; k < LB_BATCH; ++k)
                if (k0 + k < depth) {
                    const float4 m = cmap[(k0 + k) * npairs + i];
#pragma unroll
                    for (int e = 0; e < W; ++e) {
                        a0.v[e] += m.x * (m.y * v0[k].v[e] - m.z * v1[k].v[e]);
                        a1.v[e] += m.x * (m.z * v0[k].v[e] + m.y * v1[k].v[e]);
                    }
                }
        }
        a0.store(acc + (2 * i) * ld + p);
        a1.store(acc + (2 * i + 1) * ld + p);
    });
}
// cmap: LB_WIN x npairs float4 of shared memory; cell: one word of it. 16-byte columns when P % 4 == 0
// (acc, agg and incl then 16-byte aligned: the callers' layouts).
template <int NT>
__device__ void look_back(float* acc, int ld, float4* cmap, unsigned* cell, const unsigned long long* status,
                          const float* agg, const float* incl, const float4* maps, size_t slot0, int first,
                          int last, int npairs, int P, unsigned pdiv,
                          unsigned long long epoch) {
    const int tid = threadIdx.x, lane = tid & 31;
    const size_t mat = (size_t)2 * npairs * P;
    float4 carried = make_float4(1.f, 1.f, 0.f, 0.f);  // thread i < npairs: the maps of the windows folded so far
    for (int j0 = first;; j0 += LB_WIN) {
        const int left = last - j0 + 1;  // chunks from j0 to last
        if (tid < 32) {
            const bool valid = lane < LB_WIN && lane < left;
            const unsigned long long* word = status + slot0 + j0 + lane;
            unsigned answer = 0;
            for (;;) {
                const unsigned long long s = valid ? read_status(word) : 0ull;
                const bool ready = valid && (s >> 2) == epoch;
                const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
                const unsigned incl_mask = __ballot_sync(0xffffffffu, ready && (s & 3ull) == FLAG_INCLUSIVE);
                const int prefix = __ffs(~ready_mask) - 1;         // flags set from lane 0 on
                const int first_incl = __ffs(incl_mask) - 1;       // -1: none
                if (first_incl >= 0 && first_incl < prefix) {      // an inclusive one, every flag before it set
                    answer = (unsigned)(first_incl + 1) | 0x100u;
                    break;
                }
                if (prefix >= LB_WIN) {  // a whole window of aggregates (left > LB_WIN here)
                    answer = LB_WIN;
                    break;
                }
            }
            if (lane == 0) *cell = answer;
        }
        __syncthreads();
        const unsigned answer = *cell;
        const int depth = (int)(answer & 0xffu);
        const bool ends = answer & 0x100u;
        // the window's maps, one load per thread, then each pair's thread turns them into the
        // composed map in front of each chunk, and the carried one
        for (int f = tid; f < depth * npairs; f += NT) {
            const int k = f / npairs, i = f - k * npairs;
            const float4 q = __ldcg(maps + (slot0 + j0 + k) * npairs + i);
            cmap[f] = make_float4(q.x, q.y, -q.z, 0.f);
        }
        __syncthreads();
        if (tid < npairs) {
            float4 m = carried;
            for (int k = 0; k < depth; ++k) {
                const float4 q = cmap[k * npairs + tid];
                cmap[k * npairs + tid] = m;
                m = make_float4(m.x * q.x, m.y * q.y - m.z * q.z, m.y * q.z + m.z * q.y, 0.f);
            }
            carried = m;
        }
        __syncthreads();
        auto src = [&](int k) { return (ends && k == depth - 1 ? incl : agg) + (slot0 + j0 + k) * mat; };
        fold_window<NT>(acc, ld, cmap, src, depth, npairs, P, pdiv);
        __syncthreads();  // cmap and the cell are read by all before they change; acc complete
        if (ends) break;
    }
}

constexpr int cmax(int a, int b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Kernel 1: each chunk's share of the forward carry. One block per (chunk, head in group).

template <int NP, int PP>
struct Cfg1 {
    static constexpr int NPP = NP / 2;
    static constexpr int SN = NP + 4, SP = PP + 4;
    static constexpr int OFF_X = 0;                 // x [L][SP]; R(Phi_end) Agg [NP][SP] over x and B
    static constexpr int OFF_B = OFF_X + L * SP;    // B [L][SN], Bg after the setup
    static constexpr int OFF_TH = OFF_B + L * SN;   // theta [L][NPP]
    static constexpr int OFF_ROT = OFF_TH + L * NPP;  // cos, sin of Phi_t: [L][NPP][2]
    static constexpr int OFF_V = OFF_ROT + 2 * L * NPP;  // dt, lam (L + 1 steps), w: [3][SL]
    static constexpr int OFF_DEC_END = OFF_V + 3 * SL;
    static constexpr int FLOATS = OFF_DEC_END + 1;
    static_assert(NP * SP <= L * (SP + SN), "Agg fits over x and B");
    static_assert(OFF_ROT % 2 == 0, "float2 alignment");
    static_assert(OFF_B % 4 == 0 && OFF_TH % 4 == 0 && SP % 4 == 0 && SN % 4 == 0, "16-byte staging");
};

template <int NP, int PP>
__global__ void __launch_bounds__(THREADS, NP <= 64 ? 3 : 1) state_kernel(Problem pr, int units) {
    using K = Cfg1<NP, PP>;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float* sX = sm + K::OFF_X;
    float* sB = sm + K::OFF_B;
    float* sAgg = sm + K::OFF_X;
    float* sTh = sm + K::OFF_TH;
    float* sRot = sm + K::OFF_ROT;
    float* v_dt = sm + K::OFF_V;
    float* v_lam = v_dt + SL;
    float* v_w = v_lam + SL;
    float* s_dec_end = sm + K::OFF_DEC_END;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;
    const int nc = pr.nc, T = pr.T, H = pr.H, P = pr.P, N = pr.N, npairs = N / 2;
    PHASE_AT(11, 0);
    const int c = blockIdx.x / units, hl = blockIdx.x % units, bh = pr.bh0 + hl;
    const int h = bh % H, b = bh / H, t0 = c * L;
    const float A_h = pr.A[h];
    auto row_of = [&](int t) { return (b * T + t) * H + h; };
    const size_t slot0 = (size_t)hl * nc, slot = slot0 + c, mat = (size_t)N * P;

    // ---- the chunk's state-side inputs into shared memory, zero where out of range
    const long long row0 = row_of(t0);
    stage_rows<THREADS, L, PP>(pr.vec_p, RowRange{row0 * P, (long long)H * P, 0, T - t0, P},
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
    for (int f = tid; f <= L; f += THREADS) {  // one step past the chunk: bn of the next chunk's first step
        const bool ok = t0 + f < T;
        copy4(v_dt + f, ok ? pr.dt + row_of(t0 + f) : pr.dt, ok);
        copy4(v_lam + f, ok ? pr.lam + row_of(t0 + f) : pr.lam, ok);
    }
    copy_commit();
    copy_wait_all();
    __syncthreads();
    PHASE_AT(12, 0);

    // ---- setup: write weights w_t = decend_t e_t (warp 0), cos and sin of every angle
    if (warp == 0) {
        double cl[2], cl_end;
        decay_prefix(v_dt, A_h, cl, cl_end);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            const float e = v_lam[t] * v_dt[t] + (1.f - v_lam[t + 1]) * v_dt[t + 1];
            v_w[t] = expf((float)(cl_end - cl[k])) * e;
        }
        if (lane == 0) *s_dec_end = expf((float)cl_end);
    }
    for (int f = tid; f < L * K::NPP; f += THREADS) sincos_turn(sTh[f], &sRot[2 * f + 1], &sRot[2 * f]);
    __syncthreads();
    running_rotation<K::NPP, THREADS>(sRot, sB, nullptr, K::SN);
    __syncthreads();
    PHASE_AT(13, 0);

    // ---- Agg = (w Bg)^T X, N x P, computed as its transpose X^T (w Bg), P x N, so that one warp's
    // NTL tiles side by side share their A fragment (x) and each B fragment (w Bg) serves one tile
    // (as N x P tiles, one per warp, every tile loaded and split both of its operands). Kept in
    // registers until x and B are spent.
    constexpr int NTL = (PP / 16) * (NP / 32) >= WARPS ? 4 : (PP / 16) * (NP / 16) >= WARPS ? 2 : 1;
    constexpr int CG = NP / (8 * NTL), GPW = ((PP / 16) * CG + WARPS - 1) / WARPS;
    auto each_agg_group = [&](auto&& body) { each_tile_group<PP / 16, CG, WARPS, NTL>(warp, P, N, body); };
    float acc[GPW][NTL][4] = {};
    each_agg_group([&](int q, int p0, int n0) {
        mma_tiles(acc[q], p0, n0, 0, L, [&](int p, int r) { return sX[r * K::SP + p]; },
                  [&](int r, int n) { return sB[r * K::SN + n] * v_w[r]; });
    });
    __syncthreads();
    each_agg_group([&](int q, int p0, int n0) {
#pragma unroll
        for (int t = 0; t < NTL; ++t)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                sAgg[(n0 + 8 * t + 2 * tg + (i & 1)) * K::SP + p0 + g + (i >= 2 ? 8 : 0)] = acc[q][t][i];
    });
    __syncthreads();

    // ---- publish R(Phi_end) Agg (chunk 0's is Gin(1)) and the map
    const float dec_end = *s_dec_end;
    const float* rot_end = sRot + 2 * (L - 1) * K::NPP;
    float* mine = (c == 0 ? pr.incl1 : pr.agg1) + slot * mat;
    for_pair_columns<THREADS>(npairs, P, pr.pdiv, [&](int i, int p, auto width) {
        constexpr int W = decltype(width)::value;
        const float co = rot_end[2 * i], s = rot_end[2 * i + 1];
        float* a = sAgg + (2 * i) * K::SP + p;
        Cols<W> e0, e1;
        e0.load(a);
        e1.load(a + K::SP);
#pragma unroll
        for (int e = 0; e < W; ++e) {
            const float v0 = e0.v[e], v1 = e1.v[e];
            e0.v[e] = co * v0 - s * v1;
            e1.v[e] = s * v0 + co * v1;
        }
        e0.store(a);
        e1.store(a + K::SP);
        e0.store_cg(mine + (size_t)(2 * i) * P + p);
        e1.store_cg(mine + (size_t)(2 * i + 1) * P + p);
    });
    for (int i = tid; i < npairs; i += THREADS)
        __stcg(pr.maps + slot * npairs + i, make_float4(dec_end, rot_end[2 * i], rot_end[2 * i + 1], 0.f));
    PHASE_AT(14, 0);
}

// Kernel 2: the forward carry, chunk by chunk, Gin(c+1) = R(Phi_end) Agg_c + dec_end R(Phi_end) Gin(c)
// (kernel 1 stores chunk 0's R(Phi_end) Agg as Gin(1)): one thread per (head in group, row pair,
// column), the next CARRY_AHEAD chunks' loads in flight while the chain folds. 80 registers.
constexpr int CARRY_AHEAD = 8, CARRY_THREADS = 128;
__global__ void __launch_bounds__(CARRY_THREADS) carry_kernel(Problem pr, int units) {
    // the gradient kernel may start now: it waits for this kernel to finish before reading Gin
    cudaTriggerProgrammaticLaunchCompletion();
    const int npairs = pr.N / 2, P = pr.P, nc = pr.nc;
    const long long per_head = (long long)npairs * P;
    const long long f = (long long)blockIdx.x * CARRY_THREADS + threadIdx.x;
    if (f >= units * per_head) return;
    const int hl = (int)(f / per_head), r = (int)(f - hl * per_head), i = r / P, p = r - i * P;
    const size_t mat = (size_t)pr.N * P, slot0 = (size_t)hl * nc;
    const size_t o0 = (size_t)(2 * i) * P + p, o1 = o0 + P;
    float h0 = __ldcg(pr.incl1 + slot0 * mat + o0), h1 = __ldcg(pr.incl1 + slot0 * mat + o1);
    for (int c0 = 1; c0 < nc; c0 += CARRY_AHEAD) {
        float a0[CARRY_AHEAD], a1[CARRY_AHEAD];
        float4 m[CARRY_AHEAD];
#pragma unroll
        for (int k = 0; k < CARRY_AHEAD; ++k) {
            const size_t slot = slot0 + (c0 + k < nc ? c0 + k : c0);
            a0[k] = __ldcg(pr.agg1 + slot * mat + o0);
            a1[k] = __ldcg(pr.agg1 + slot * mat + o1);
            m[k] = __ldcg(pr.maps + slot * npairs + i);
        }
#pragma unroll
        for (int k = 0; k < CARRY_AHEAD; ++k) {
            if (c0 + k >= nc) break;
            const float n0 = a0[k] + m[k].x * (m[k].y * h0 - m[k].z * h1);
            const float n1 = a1[k] + m[k].x * (m[k].z * h0 + m[k].y * h1);
            h0 = n0;
            h1 = n1;
            float* incl = pr.incl1 + (slot0 + c0 + k) * mat;
            __stcg(incl + o0, h0);
            __stcg(incl + o1, h1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kernel 3: the adjoint carry and every gradient of a chunk. One block per (chunk, head in
// group), tickets chunk-major descending.
// per-step vectors (index into the OFF_V block)
enum { V_DT, V_LAM, V_DEC, V_DECEND, V_GAM, V_BNN, V_E, V_BC, V_XY, V_CRDCR, V_DGAM, V_COUNT };
enum { MISC_ABETA0, MISC_DOTEND, MISC_TICKET, MISC_FLAG };

template <int NP, int PP>
struct Cfg2 {
    static constexpr int NPP = NP / 2;
    static constexpr int SN = NP + 4, SP = PP + 4;
    static constexpr bool STAGE = NP <= 64 && PP <= 64;  // Gin and Gfut in shared memory
    // Up to S = 64, two blocks of 8 warps per SM (113 KB of shared memory each at most): one block's
    // barriers and round trips are the other's issue slots. At S = 128 one block of GRAD_WARPS.
    static constexpr int WARPS = STAGE ? 8 : GRAD_WARPS;
    static constexpr int BLOCKS_PER_SM = STAGE ? 2 : 1;
    static constexpr int THREADS = 32 * WARPS;
    static constexpr int TPAIR = NP >= 32 ? 4 : 2;  // 16 x 8 tiles side by side per warp in the products that allow it
    static_assert(NP % (8 * TPAIR) == 0 && PP % (8 * TPAIR) == 0, "whole groups of TPAIR tiles across N and P");
    static constexpr int GSZ = STAGE ? NP * SP : 0;
    static constexpr int TPP = THREADS / NPP, SEG = L / TPP;  // the running rotation: threads per pair, steps each
    // Six regions, each taken in turn (phases of the kernel in brackets):
    //   RX:  x [L][SP] (staging .. D), then Gfut [NP][SP] (look-back .. Gx)
    //   RDY: dY [L][SP] (staging .. dCr), then x again (Gx)
    //   B, C: Bg, Cr [L][SN] (staging .. the end)
    //   M1:  Dec Q [L][SL] (Q .. dx), then Gin [NP][SP] (dCr), then dPhi [L][SL] (Gx .. dtheta)
    //   M2:  Dec D [L][SL] (D .. Gx)
    // the angles never enter shared memory (registers, then the scratch `rot` for the epilogues)
    static constexpr int OFF_X = 0;
    static constexpr int OFF_DY = OFF_X + cmax(L * SP, GSZ);
    static constexpr int OFF_B = OFF_DY + L * SP;
    static constexpr int OFF_C = OFF_B + L * SN;
    static constexpr int OFF_M1 = OFF_C + L * SN;
    static constexpr int OFF_M2 = OFF_M1 + cmax(L * SL, GSZ);
    static constexpr int OFF_V = OFF_M2 + L * SL;
    static constexpr int OFF_CMAP = OFF_V + V_COUNT * SL;  // the look-back's maps; the rotation's segment totals
    static constexpr int OFF_XPREV = OFF_CMAP + cmax(4 * NPP * LB_WIN, 2 * THREADS);
    static constexpr int OFF_BPREV = OFF_XPREV + PP;
    static constexpr int OFF_CROSS = OFF_BPREV + NP;
    static constexpr int OFF_END = OFF_CROSS + NPP;  // cos, sin of Phi_end per pair
    static constexpr int OFF_MISC = OFF_END + 2 * NPP;
    static constexpr int OFF_CL = OFF_MISC + 8;      // cl_t in double: [L]
    static constexpr int FLOATS = OFF_CL + 2 * L;
    static_assert(THREADS % NPP == 0 && L % TPP == 0, "whole segments of steps per thread");
    static_assert(L % 32 == 0 && L <= THREADS, "one thread per step in whole warps");
    static_assert(2 * (NP / 8 / TPAIR) * L <= cmax(4 * NPP * LB_WIN, 2 * THREADS), "the epilogues' row sums in the maps' place");
    static_assert(OFF_CMAP % 4 == 0 && OFF_CL % 2 == 0 && OFF_END % 2 == 0, "alignment");
    static_assert(OFF_DY % 4 == 0 && OFF_B % 4 == 0 && OFF_C % 4 == 0 && OFF_M1 % 4 == 0 &&
                      SP % 4 == 0 && SN % 4 == 0, "16-byte staging");
    static_assert(!STAGE || (size_t)FLOATS * 4 + 1024 <= 233472 / 2, "two blocks per SM");
};

template <int NP, int PP>
__global__ void __launch_bounds__(Cfg2<NP, PP>::THREADS, Cfg2<NP, PP>::BLOCKS_PER_SM) grad_kernel(Problem pr, int units) {
    using K = Cfg2<NP, PP>;
    constexpr int NW = K::WARPS, NT = K::THREADS, TPAIR = K::TPAIR;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float* sX = sm + K::OFF_X;
    float* sDY = sm + K::OFF_DY;
    float* sB = sm + K::OFF_B;
    float* sC = sm + K::OFF_C;
    float* sM1 = sm + K::OFF_M1;
    float* sM2 = sm + K::OFF_M2;
    float2* rot_end = reinterpret_cast<float2*>(sm + K::OFF_END);
    float* V = sm + K::OFF_V;
    auto vec = [&](int which) { return V + which * SL; };
    float* v_dt = vec(V_DT);
    float* v_lam = vec(V_LAM);
    float* v_dec = vec(V_DEC);
    float* v_decend = vec(V_DECEND);
    float* v_gam = vec(V_GAM);
    float* v_bnn = vec(V_BNN);
    float* v_e = vec(V_E);
    float* v_bc = vec(V_BC);
    float* v_xy = vec(V_XY);
    float* v_crdcr = vec(V_CRDCR);
    float* v_dgam = vec(V_DGAM);
    float4* cmap = reinterpret_cast<float4*>(sm + K::OFF_CMAP);
    float* xprev = sm + K::OFF_XPREV;
    float* bprev = sm + K::OFF_BPREV;
    float* crossend = sm + K::OFF_CROSS;
    float* misc = sm + K::OFF_MISC;
    unsigned* misc_u = reinterpret_cast<unsigned*>(misc);
    // The prefix sums of dt A reach -4096 in a chunk of fast decay, where a float32 difference
    // cl_t - cl_s of two of them would be off by 1e-3 absolute (1e-3 relative in Dec_ts): kept in double,
    // in log2 units (cl_t log2 e), so that Dec_ts = 2^(cl_t - cl_s) is one ex2.
    double* v_cl = reinterpret_cast<double*>(sm + K::OFF_CL);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;
    const int nc = pr.nc, T = pr.T, H = pr.H, P = pr.P, N = pr.N, npairs = N / 2;
    const int ticket = draw_ticket(pr.counter, (unsigned long long)units * nc, misc_u + MISC_TICKET);
    PHASE_AT(0, 0);
    const int c = nc - 1 - ticket / units, hl = ticket % units, bh = pr.bh0 + hl;
    const int h = bh % H, b = bh / H, t0 = c * L;
    // products stop at the real sizes (padding rows and columns are zero): k steps of 8, row blocks of 16
    const int Nk = (N + 7) & ~7, Pk = (P + 7) & ~7;
    const float A_h = pr.A[h];
    auto row_of = [&](int t) { return (b * T + t) * H + h; };  // (b, t, h) row, fits in int
    const size_t slot0 = (size_t)hl * nc, slot = slot0 + c, mat = (size_t)N * P;
    const bool has_prev = c > 0, has_next = c + 1 < nc;
    // Gin(c) (the carry kernel's Gin of chunk c-1) and Gfut(c): shared memory, or global at S = 128
    float* gf = K::STAGE ? sm + K::OFF_X : pr.gfut + slot * mat;
    const float* gin = K::STAGE ? sm + K::OFF_M1 : pr.incl1 + (has_prev ? slot - 1 : slot) * mat;
    const int gld = K::STAGE ? K::SP : P;
    float2* rot = pr.rot + slot * (size_t)L * npairs;  // this chunk's Phi_t, for the epilogues

    // ---- the angles of this thread's steps of the running rotation (TPP threads per pair, SEG
    // steps each) straight into registers, 0 (no turn) out of range; issued before the staging
    const int pair = tid % K::NPP, part = tid / K::NPP, t_begin = part * K::SEG;
    float th[K::SEG];
#pragma unroll
    for (int k = 0; k < K::SEG; ++k) {
        const int t = t0 + t_begin + k;
        th[k] = t < T && pair < npairs ? __ldg(pr.theta + (size_t)row_of(t) * npairs + pair) : 0.f;
    }

    // ---- the chunk's inputs (and Gin(c)) into shared memory, zero where out of range
    const long long row0 = row_of(t0);
    const RowRange x_rows{row0 * P, (long long)H * P, 0, T - t0, P};
    stage_rows<NT, L, PP>(pr.vec_p, x_rows, [&](int r, int p, long long o, bool ok, int w) {
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
    for (int f = tid; f <= L; f += NT) {  // one step past the chunk: bn of the next chunk's first step
        const bool ok = t0 + f < T;
        copy4(v_dt + f, ok ? pr.dt + row_of(t0 + f) : pr.dt, ok);
        copy4(v_lam + f, ok ? pr.lam + row_of(t0 + f) : pr.lam, ok);
    }
    for (int f = tid; f < PP; f += NT) {
        const bool ok = has_prev && f < P;
        copy4(xprev + f, ok ? pr.x + (size_t)row_of(t0 - 1) * P + f : pr.x, ok);
    }
    for (int f = tid; f < NP; f += NT) {
        const bool ok = has_prev && f < N;
        copy4(bprev + f, ok ? pr.B + (size_t)row_of(t0 - 1) * N + f : pr.B, ok);
    }
    copy_commit();
    for (int f = tid; f < K::NPP; f += NT) crossend[f] = 0.f;
    if (tid < 2) misc[tid] = 0.f;
    copy_wait_all();
    __syncthreads();
    PHASE_AT(1, 0);

    // ---- setup: decays (warp 0), cos and sin of every angle, then the running rotation
    if (warp == 0) {
        double cl[2], cl_end;
        decay_prefix(v_dt, A_h, cl, cl_end);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            const float gam = v_lam[t] * v_dt[t];
            const float bnn = (1.f - v_lam[t + 1]) * v_dt[t + 1];
            v_cl[t] = cl[k] * 1.4426950408889634;  // log2 e
            v_dec[t] = expf((float)cl[k]);
            v_decend[t] = expf((float)(cl_end - cl[k]));
            v_gam[t] = gam;
            v_bnn[t] = bnn;
            v_e[t] = gam + bnn;
        }
    }
    // the running rotation as in the state kernel's running_rotation, each segment's running
    // products in registers and only the segments' totals through shared memory (the look-back's
    // maps' place); Bg = R(-Phi) B, Cr = R(-Phi) C in place, Phi_t to the scratch for the epilogues
    {
        float2* totals = reinterpret_cast<float2*>(cmap);
        float pc = 1.f, ps = 0.f, rc[K::SEG], rs[K::SEG];
#pragma unroll
        for (int k = 0; k < K::SEG; ++k) {
            float sn, cs;
            sincos_turn(th[k], &sn, &cs);
            const float nc = pc * cs - ps * sn, ns = pc * sn + ps * cs;
            pc = nc;
            ps = ns;
            rc[k] = pc;
            rs[k] = ps;
        }
        if (part < K::TPP - 1) totals[part * K::NPP + pair] = make_float2(pc, ps);
        __syncthreads();
        const float2 off = offset_of_earlier(part, [&](int q) { return totals[q * K::NPP + pair]; });
        const float oc = off.x, os = off.y;
#pragma unroll
        for (int k = 0; k < K::SEG; ++k) {
            const int t = t_begin + k;
            const float c = oc * rc[k] - os * rs[k], sn = oc * rs[k] + os * rc[k];
            float2* b2 = reinterpret_cast<float2*>(sB + t * K::SN + 2 * pair);
            float2* c2 = reinterpret_cast<float2*>(sC + t * K::SN + 2 * pair);
            const float2 bv = *b2, cv = *c2;
            *b2 = make_float2(c * bv.x + sn * bv.y, c * bv.y - sn * bv.x);
            *c2 = make_float2(c * cv.x + sn * cv.y, c * cv.y - sn * cv.x);
            if (pair < npairs) rot[t * npairs + pair] = make_float2(c, sn);
            if (t == L - 1) rot_end[pair] = make_float2(c, sn);
        }
    }
    __syncthreads();
    PHASE_AT(2, 0);

    // ---- BAgg = (dec Cr)^T dY, published at once (last chunk: it is dGin, inclusive)
    {
        float* mine = (has_next ? pr.agg2 : pr.incl2) + slot * mat;
        constexpr int GT = PP / 8 / TPAIR, GROUPS = (NP / 16) * GT;  // pairs of 16 x 8 tiles
        for (int j = warp; j < GROUPS; j += NW) {
            const int m0 = (j / GT) * 16, n0 = (j % GT) * 8 * TPAIR;
            if (m0 >= N || n0 >= P) continue;
            float acc[TPAIR][4] = {};
            mma_tiles(acc, m0, n0, 0, L, [&](int n, int r) { return sC[r * K::SN + n] * v_dec[r]; },
                      [&](int r, int p) { return sDY[r * K::SP + p]; });
#pragma unroll
            for (int q = 0; q < TPAIR; ++q)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int n = m0 + g + 8 * half, p = n0 + 8 * q + 2 * tg;
                    if (n >= N || p >= P) continue;
                    float* out = mine + (size_t)n * P + p;  // the scratch: cudaMalloc'd
                    if (P % 2 == 0) {
                        __stcg(reinterpret_cast<float2*>(out), make_float2(acc[q][2 * half], acc[q][2 * half + 1]));
                    } else {
                        __stcg(out, acc[q][2 * half]);
                        if (p + 1 < P) __stcg(out + 1, acc[q][2 * half + 1]);
                    }
                }
        }
        __syncthreads();
        if (tid == 0) {
            set_status(pr.status + slot, (pr.epoch << 2) | (has_next ? FLAG_AGGREGATE : FLAG_INCLUSIVE));
        }
    }
    PHASE_AT(3, 0);

    // ---- Q = Cr Bg^T and D = dY X^T, lower triangles, stored times Dec_ts (over theta in M1)
    for (int j = warp; j < 40; j += NW) {
        const bool isD = j >= 20;
        int rb, ct;
        tri_tile(isD ? j - 20 : j, rb, ct);
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        if (!isD)
            mma_range(acc, rb * 16, ct * 8, 0, Nk, [&](int t, int n) { return sC[t * K::SN + n]; },
                      [&](int n, int s) { return sB[s * K::SN + n]; });
        else
            mma_range(acc, rb * 16, ct * 8, 0, Pk, [&](int t, int p) { return sDY[t * K::SP + p]; },
                      [&](int p, int s) { return sX[s * K::SP + p]; });
        float* dst = isD ? sM2 : sM1;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int t = rb * 16 + g + (i >= 2 ? 8 : 0), s = ct * 8 + 2 * tg + (i & 1);
            if (t == s) (isD ? v_xy : v_bc)[t] = acc[i];
            dst[t * SL + s] = s <= t ? acc[i] * exp2_approx((float)(v_cl[t] - v_cl[s])) : 0.f;
        }
    }

    PHASE_AT(4, 0);  // warp 0's tiles done
    __syncthreads();  // D has read x: Gfut takes its place
    // everything above reads only inputs; from here on kernel 1's maps and kernel 2's states: wait
    // for kernel 2 to finish (launched as its programmatic dependent, this block may have started
    // before it did; kernel 2 starts after kernel 1 ends)
    cudaGridDependencySynchronize();
    if (K::STAGE) {
        for (int f = tid; f < NP * K::SP; f += NT) gf[f] = 0.f;  // padding included
    } else {
        for (int f = tid; f < N * P; f += NT) {
            const int n = div_p(f, pr.pdiv);
            gf[n * gld + f - n * P] = 0.f;
        }
    }
    // ---- look back over chunks c+1, c+2, ... for dGin(c+1); then the chunk-end terms (cross and
    // dot of Gin(c+1) and dGin(c+1)), Gfut(c) = R(-Phi_end) dGin(c+1), the part
    // B_{t0-1} . dec_end Gfut x_{t0-1} of alpha_t0 dbeta_t0, and dGin(c) = BAgg + dec_end Gfut published
    if (has_next) {
        look_back<NT>(gf, gld, cmap, misc_u + MISC_FLAG, pr.status, pr.agg2, pr.incl2, pr.maps, slot0, c + 1, nc - 1,
                      npairs, P, pr.pdiv, pr.epoch);
        PHASE_AT(5, 0);
        const float* Gnext = pr.incl1 + slot * mat;
        const float* bagg = pr.agg2 + slot * mat;
        float* incl = pr.incl2 + slot * mat;
        const float dec_end = v_dec[L - 1];
        float dot = 0.f, ab = 0.f;
        // W columns per lane (16 bytes when head_dim allows), every load of a lane's group issued
        // before its stores (one element at a time, each element waited on its own L2 round trips:
        // 5 % of the kernel's stall samples). The cross terms of a row pair are summed over the lanes
        // that share it (seg: a power of two when the row's groups divide or fill 32 lanes) and added
        // with one shared atomic per pair (a float atomicAdd on shared memory is a compare-and-swap
        // loop, which 512 contended threads turned into 28 % of this kernel's instructions).
        with_column_width(P, [&](auto width) {
            constexpr int W = decltype(width)::value;
            const int gpr = P / W, groups = npairs * gpr;
            const int seg = gpr % 32 == 0 ? 32 : 32 % gpr == 0 ? gpr : 0;
            for (int w0 = warp * 32; w0 < groups; w0 += NT) {
                const int f = w0 + lane;
                const bool ok = f < groups;
                const int i = div_p(W * (ok ? f : w0), pr.pdiv), p = W * (ok ? f : w0) - i * P;
                float cross = 0.f;
                if (ok) {
                    float* q = gf + (2 * i) * gld + p;
                    const size_t o0 = (size_t)(2 * i) * P + p, o1 = o0 + P;
                    Cols<W> d0, d1, n0, n1, b0, b1, xp;
                    d0.load(q);
                    d1.load(q + gld);
                    n0.load(Gnext + o0);
                    n1.load(Gnext + o1);
                    b0.load_cg(bagg + o0);
                    b1.load_cg(bagg + o1);
                    xp.load(xprev + p);
                    const float co = rot_end[i].x, sn = rot_end[i].y;
                    const float bp0 = bprev[2 * i], bp1 = bprev[2 * i + 1];
#pragma unroll
                    for (int e = 0; e < W; ++e) {
                        const float g0 = d0.v[e], g1 = d1.v[e];
                        dot += n0.v[e] * g0 + n1.v[e] * g1;
                        cross += n0.v[e] * g1 - n1.v[e] * g0;
                        d0.v[e] = co * g0 + sn * g1;  // Gfut = R(-Phi_end) dGin(c+1)
                        d1.v[e] = co * g1 - sn * g0;
                        ab += (bp0 * d0.v[e] + bp1 * d1.v[e]) * xp.v[e];
                        b0.v[e] += dec_end * d0.v[e];  // dGin(c) = BAgg + dec_end Gfut
                        b1.v[e] += dec_end * d1.v[e];
                    }
                    d0.store(q);
                    d1.store(q + gld);
                    b0.store_cg(incl + o0);
                    b1.store_cg(incl + o1);
                }
                if (seg) {
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1)
                        if (o < seg) cross += __shfl_xor_sync(0xffffffffu, cross, o);
                    if (ok && lane % seg == 0) atomicAdd(&crossend[i], cross);
                } else if (ok) {
                    atomicAdd(&crossend[i], cross);
                }
            }
        });
        dot = warp_sum(dot);
        ab = warp_sum(ab);
        if (lane == 0) {
            atomicAdd(&misc[MISC_DOTEND], dot);
            atomicAdd(&misc[MISC_ABETA0], ab * dec_end);
        }
        __syncthreads();
        if (tid == 0) {
            set_status(pr.status + slot, (pr.epoch << 2) | FLAG_INCLUSIVE);
        }
    }
    // the other part of alpha_t0 dbeta_t0: sum_s dec_s (dy_s . x_{t0-1}) (B_{t0-1} . Cr_s)
    if (has_prev && tid < L) {  // L threads: whole warps
        const int s = tid;
        float xd = 0.f, bc = 0.f;
        for (int p = 0; p < P; ++p) xd += sDY[s * K::SP + p] * xprev[p];
        for (int n = 0; n < N; ++n) bc += bprev[n] * sC[s * K::SN + n];
        const float part = warp_sum(v_dec[s] * xd * bc);
        if (lane == 0) atomicAdd(&misc[MISC_ABETA0], part);
    }
    __syncthreads();
    PHASE_AT(6, 0);

    // staged in shared memory, Gin and Gfut are zero in their padding: no bounds test per operand
    auto gf_at = [&](int n, int p) { return K::STAGE || (n < N && p < P) ? gf[n * gld + p] : 0.f; };
    auto gin_at = [&](int n, int p) { return K::STAGE || (n < N && p < P) ? gin[n * gld + p] : 0.f; };

    // ---- dx = e Xb + (skip - bn_next BC) dy,  Xb = (Dec Q)^T dY + decend (Bg Gfut): every warp's
    // products, then Gin's staging into M1 (Dec Q is done with), in flight while the warps store dx
    // (staged after the stores, Gin cost 2.1 us of waiting: notes, "What bounds this design")
    {
        const float skip_h = pr.skip[h];
        constexpr int GT = PP / 8 / TPAIR, JX = (4 * GT + NW - 1) / NW;  // tile groups, per warp
        float acc[JX][TPAIR][4] = {};
        auto each_dx_group = [&](auto&& body) { each_tile_group<4, GT, NW, TPAIR>(warp, L, P, body); };
        each_dx_group([&](int jj, int m0, int n0) {
            auto& a = acc[jj];
            mma_tiles(a, m0, n0, m0, L, [&](int t, int s) { return sM1[s * SL + t]; },
                      [&](int s, int p) { return sDY[s * K::SP + p]; });
            if (has_next)
                mma_tiles(a, m0, n0, 0, Nk, [&](int t, int n) { return sB[t * K::SN + n] * v_decend[t]; },
                          [&](int n, int p) { return gf_at(n, p); });
        });
        __syncthreads();  // sM1 (Dec Q) is free: Gin takes it, then dPhi
        if (K::STAGE) {
            const float* src = pr.incl1 + (has_prev ? slot - 1 : slot) * mat;
            float* sGin = sm + K::OFF_M1;
            stage_rows<NT, NP, PP>(pr.vec_p, RowRange{0, P, 0, has_prev ? N : 0, P},
                                   [&](int n, int p, long long o, bool ok, int w) {
                                       copy_w(w, sGin + n * K::SP + p, ok ? src + o : pr.incl1, ok);
                                   });
            copy_commit();
        }
        each_dx_group([&](int jj, int m0, int n0) {
            const auto& a = acc[jj];
#pragma unroll
            for (int q = 0; q < TPAIR; ++q)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int t = m0 + g + 8 * half, p = n0 + 8 * q + 2 * tg;
                    if (t0 + t >= T || p >= P) continue;
                    const float e = v_e[t], k = skip_h - v_bnn[t] * v_bc[t];
                    const float2 v = make_float2(e * a[q][2 * half] + k * sDY[t * K::SP + p],
                                                 e * a[q][2 * half + 1] + k * sDY[t * K::SP + p + 1]);
                    store_pair(pr.dx + (size_t)row_of(t0 + t) * P + p, v, pr.pair_p, p + 1 < P);
                }
        });
    }
    if (K::STAGE) copy_wait_all();
    __syncthreads();
    PHASE_AT(7, 0);

    // ---- dCr = (Dec e D) Bg + dec (dY Gin^T), then Gx = (Dec D)^T Cr + decend (X Gfut^T): the same
    // tiles in the same warps, so that each thread's share of dPhi (a term from each) stays in its
    // registers between the two. x comes back into dY's place once every warp's dCr products are
    // done with dY, in flight while the warps store dC (after the stores, it cost 9.1 us of waiting).
    constexpr int GT = NP / 8 / TPAIR, JW = (4 * GT + NW - 1) / NW;
    // body(jj, m0, n0g) for this warp's tile groups (rows m0, columns n0g, TPAIR tiles)
    auto each_group = [&](auto&& body) { each_tile_group<4, GT, NW, TPAIR>(warp, L, N, body); };
    // body(q, half, t, n) for each (step, column pair) a thread holds of a group's accumulators
    auto each_element = [&](int m0, int n0g, auto&& body) {
#pragma unroll
        for (int q = 0; q < TPAIR; ++q) {
            if (n0g + 8 * q >= N) break;  // whole warp
#pragma unroll
            for (int half = 0; half < 2; ++half) body(q, half, m0 + g + 8 * half, n0g + 8 * q + 2 * tg);
        }
    };
    // The epilogues' sums over n per step (cr . dcr, bg . gx): a thread's own terms, then the 4 lanes of
    // its rows, then one partial per column group [GT][L] in the look-back maps' place, added up in a
    // fixed order by warp 0 below. Shared-memory float atomics are compare-and-swap loops on this GPU.
    float* part_crdcr = reinterpret_cast<float*>(cmap);
    float* part_dgam = part_crdcr + GT * L;
    auto store_row_sums = [&](float* part, int m0, int n0g, float (&rs)[2]) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            float x = rs[half];
            x += __shfl_xor_sync(0xffffffffu, x, 1);
            x += __shfl_xor_sync(0xffffffffu, x, 2);
            if (tg == 0) part[(n0g / (8 * TPAIR)) * L + m0 + g + 8 * half] = x;
        }
    };
    // cos, sin of Phi_t for a group's elements, loaded before its products so that their latency
    // (the scratch is global memory) passes under them
    auto turns_of = [&](int m0, int n0g, float2 (&r)[TPAIR][2]) {
#pragma unroll
        for (int q = 0; q < TPAIR; ++q)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int t = m0 + g + 8 * half, n = n0g + 8 * q + 2 * tg;
                r[q][half] = t0 + t < T && n < N ? rot[t * npairs + n / 2] : make_float2(1.f, 0.f);
            }
    };
    auto store_turned = [&](float* out, int t, int n, float2 r, float v0, float v1) {  // R(Phi_t) back to B's and C's frame
        if (t0 + t < T && n < N) {
            const float2 v = make_float2(r.x * v0 - r.y * v1, r.y * v0 + r.x * v1);
            store_pair(out + (size_t)row_of(t0 + t) * N + n, v, pr.pair_n, true);  // N is even
        }
    };
    float dphi[JW][TPAIR][2];  // (dcr0 cr1 - dcr1 cr0) + (dbg0 bg1 - dbg1 bg0) per (row half, tile)
    {
        float2 turn[JW][TPAIR][2];
        float dcr[JW][TPAIR][4] = {};
        each_group([&](int jj, int m0, int n0g) {
            turns_of(m0, n0g, turn[jj]);
            mma_tiles(dcr[jj], m0, n0g, 0, m0 + 16,
                      [&](int t, int s) { return sM2[t * SL + s] * (s == t ? v_gam[s] : v_e[s]); },
                      [&](int s, int n) { return sB[s * K::SN + n]; });
            if (has_prev)
                mma_tiles(dcr[jj], m0, n0g, 0, Pk, [&](int t, int p) { return sDY[t * K::SP + p] * v_dec[t]; },
                          [&](int p, int n) { return gin_at(n, p); });
        });
        __syncthreads();  // dY and Gin are done with
        stage_rows<NT, L, PP>(pr.vec_p, x_rows, [&](int r, int p, long long o, bool ok, int w) {
            copy_w(w, sDY + r * K::SP + p, pr.x + (ok ? o : 0), ok);
        });
        copy_commit();
        each_group([&](int jj, int m0, int n0g) {
            float rs[2] = {0.f, 0.f};
            each_element(m0, n0g, [&](int q, int half, int t, int n) {
                const float dcr0 = dcr[jj][q][2 * half], dcr1 = dcr[jj][q][2 * half + 1];
                const float cr0 = sC[t * K::SN + n], cr1 = sC[t * K::SN + n + 1];
                rs[half] += cr0 * dcr0 + cr1 * dcr1;
                dphi[jj][q][half] = dcr0 * cr1 - dcr1 * cr0;
                store_turned(pr.dC, t, n, turn[jj][q][half], dcr0, dcr1);
            });
            store_row_sums(part_crdcr, m0, n0g, rs);
        });
    }
    copy_wait_all();
    __syncthreads();
    const float* sXg = sDY;  // x again
    each_group([&](int jj, int m0, int n0g) {
        float2 turn[TPAIR][2];
        turns_of(m0, n0g, turn);
        float gx[TPAIR][4] = {};
        mma_tiles(gx, m0, n0g, m0, L, [&](int t, int s) { return sM2[s * SL + t]; },
                  [&](int s, int n) { return sC[s * K::SN + n]; });
        if (has_next)
            mma_tiles(gx, m0, n0g, 0, Pk, [&](int t, int p) { return sXg[t * K::SP + p] * v_decend[t]; },
                      [&](int p, int n) { return gf_at(n, p); });
        float rs[2] = {0.f, 0.f};
        each_element(m0, n0g, [&](int q, int half, int t, int n) {
            const float gx0 = gx[q][2 * half], gx1 = gx[q][2 * half + 1];
            const float cr0 = sC[t * K::SN + n], cr1 = sC[t * K::SN + n + 1];
            const float bg0 = sB[t * K::SN + n], bg1 = sB[t * K::SN + n + 1];
            rs[half] += bg0 * gx0 + bg1 * gx1;
            const float dbg0 = v_e[t] * gx0 - v_bnn[t] * v_xy[t] * cr0;
            const float dbg1 = v_e[t] * gx1 - v_bnn[t] * v_xy[t] * cr1;
            sM1[t * SL + n / 2] = dphi[jj][q][half] + (dbg0 * bg1 - dbg1 * bg0);
            store_turned(pr.dB, t, n, turn[q][half], dbg0, dbg1);
        });
        store_row_sums(part_dgam, m0, n0g, rs);
    });
    __syncthreads();
    PHASE_AT(8, 0);
    // ---- per-step scalars (warp 0) and angle gradients (one thread per pair, warps 1..)
    if (warp == 0) {
        const int groups = (N + 8 * TPAIR - 1) / (8 * TPAIR);  // column groups that hold columns
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            float crdcr = 0.f, dgam = 0.f;
            for (int q = 0; q < groups; ++q) {
                crdcr += part_crdcr[q * L + t];
                dgam += part_dgam[q * L + t];
            }
            v_crdcr[t] = crdcr;
            v_dgam[t] = dgam;
        }
        __syncwarp();  // abeta reads the step before
        float dcl[2];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            dcl[k] = v_crdcr[t] - v_e[t] * v_dgam[t] + v_bnn[t] * v_bc[t] * v_xy[t] +
                     (t == L - 1 ? misc[MISC_DOTEND] : 0.f);
        }
        // reverse inclusive sums over the 64 steps: dloga_t = sum_{u >= t} dcl_u
        float s0 = dcl[0], s1 = dcl[1];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float u0 = __shfl_down_sync(0xffffffffu, s0, o), u1 = __shfl_down_sync(0xffffffffu, s1, o);
            if (lane + o < 32) {
                s0 += u0;
                s1 += u1;
            }
        }
        s0 += __shfl_sync(0xffffffffu, s1, 0);
        float da = 0.f, dsk = 0.f;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            const float dloga = k ? s1 : s0;
            const float abeta = t == 0 ? misc[MISC_ABETA0] : v_dgam[t - 1] - v_bc[t - 1] * v_xy[t - 1];
            const float lam = v_lam[t], d = v_dt[t], dg = v_dgam[t];
            if (t0 + t < T) {
                pr.ddt[row_of(t0 + t)] = A_h * dloga + lam * dg + (1.f - lam) * abeta;
                pr.dlam[row_of(t0 + t)] = d * (dg - abeta);
            }
            da += d * dloga;
            dsk += v_xy[t];
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            da += __shfl_xor_sync(0xffffffffu, da, o);
            dsk += __shfl_xor_sync(0xffffffffu, dsk, o);
        }
        if (lane == 0) {
            const size_t q = (size_t)bh * nc + c;
            pr.partial[2 * q] = da;
            pr.partial[2 * q + 1] = dsk;
        }
        PHASE_AT(9, 0);
    } else if (tid - 32 < npairs) {
        const int i = tid - 32;
        float s = crossend[i];  // the chunk end's rotation belongs to the last step
        for (int t = L - 1; t >= 0; --t) {
            s += sM1[t * SL + i];
            if (t0 + t < T) pr.dtheta[(size_t)row_of(t0 + t) * npairs + i] = s;
        }
        PHASE_AT(10, 32);
    }
}

// Kernel 4: dA and dskip per head, the chunk shares summed in a fixed order.
__global__ void head_sums_kernel(const float* partial, float* dA, float* dskip, int batch, int H, int nc) {
    const int h = blockIdx.x, lane = threadIdx.x;
    float a = 0.f, s = 0.f;
    for (int b = 0; b < batch; ++b)
        for (int c = lane; c < nc; c += 32) {
            const size_t q = ((size_t)b * H + h) * nc + c;
            a += partial[2 * q];
            s += partial[2 * q + 1];
        }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    if (lane == 0) {
        dA[h] = a;
        dskip[h] = s;
    }
}

// Scratch kept between calls: the gradient kernel's ticket counter and one flag word per slot
// (head in group, chunk), then the data. Flags start at epoch 0, which no launch uses; a call whose
// sizes differ may find words of other launches where its flags lie, all with older epochs.
struct Scratch {
    unsigned long long* words = nullptr;
    float* data = nullptr;
    size_t nwords = 0, data_floats = 0;
    unsigned long long epoch = 0;  // launch groups so far: each gets its own
};
Scratch scratch;  // shared by every instantiation

// Makes room for `nwords` words and `floats` of data; false when out of memory.
bool reserve(size_t nwords, size_t floats) {
    Scratch& sc = scratch;
    if (nwords > sc.nwords) {
        if (sc.words) cudaFree(sc.words);
        sc.nwords = 0;
        if (cudaMalloc(&sc.words, nwords * sizeof(unsigned long long)) != cudaSuccess) {
            sc.words = nullptr;
            return false;
        }
        cudaMemset(sc.words, 0, nwords * sizeof(unsigned long long));
        sc.nwords = nwords;
    }
    if (floats > sc.data_floats) {
        if (sc.data) cudaFree(sc.data);
        sc.data_floats = 0;
        if (cudaMalloc(&sc.data, floats * sizeof(float)) != cudaSuccess) {
            sc.data = nullptr;
            return false;
        }
        sc.data_floats = floats;
    }
    return true;
}

template <int S>
void run(Problem pr, int batch, float* dA, float* dskip) {
    using K1 = Cfg1<S, S>;
    using K2 = Cfg2<S, S>;
    const int nbh = batch * pr.H, nc = pr.nc, npairs = pr.N / 2;
    const size_t smem1 = sizeof(float) * K1::FLOATS, smem2 = sizeof(float) * K2::FLOATS;
    static bool attr_set = false;  // one attribute call per instantiation
    if (!attr_set) {
        cudaFuncSetAttribute(state_kernel<S, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem1);
        cudaFuncSetAttribute(grad_kernel<S, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem2);
        attr_set = true;
    }
    // per slot: agg1, incl1, agg2, incl2 (and gfut when not staged), N x P each, the map, and the
    // gradient kernel's Phi_t (L x npairs float2)
    const size_t mat = (size_t)pr.N * pr.P, mats = K2::STAGE ? 4 : 5;
    const size_t slot_floats = mats * mat + 4 * (size_t)npairs + 2 * (size_t)L * npairs;
    const size_t per_head = (sizeof(float) * slot_floats + sizeof(unsigned long long)) * nc;
    const int group = (int)std::max<size_t>(1, std::min<size_t>(nbh, SCRATCH_CAP / per_head));
    const size_t slots = (size_t)group * nc;
    const size_t partial_floats = (2 * (size_t)nbh * nc + 3) & ~size_t(3);  // maps stay float4-aligned
    if (!reserve(1 + slots, partial_floats + slots * slot_floats)) return;  // gradients unwritten: the check says so
    Scratch& sc = scratch;
    pr.counter = sc.words;
    pr.status = sc.words + 1;
    pr.partial = sc.data;
    pr.maps = reinterpret_cast<float4*>(sc.data + partial_floats);
    pr.agg1 = sc.data + partial_floats + 4 * (size_t)npairs * slots;
    pr.incl1 = pr.agg1 + slots * mat;
    pr.agg2 = pr.incl1 + slots * mat;
    pr.incl2 = pr.agg2 + slots * mat;
    pr.gfut = K2::STAGE ? nullptr : pr.incl2 + slots * mat;
    pr.rot = reinterpret_cast<float2*>(pr.agg1 + mats * slots * mat);
    for (int bh0 = 0; bh0 < nbh; bh0 += group) {
        const int n = std::min(group, nbh - bh0);
        pr.bh0 = bh0;
        pr.epoch = ++sc.epoch;
        state_kernel<S, S><<<n * nc, THREADS, smem1>>>(pr, n);
        const long long carry_threads = (long long)n * npairs * pr.P;
        carry_kernel<<<(unsigned)((carry_threads + CARRY_THREADS - 1) / CARRY_THREADS), CARRY_THREADS>>>(pr, n);
        // as the carry kernel's programmatic dependent: its blocks' first phases (staging, BAgg, Q
        // and D) run beside the carry instead of after it
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(n * nc);
        cfg.blockDim = dim3(K2::THREADS);
        cfg.dynamicSmemBytes = smem2;
        cfg.stream = 0;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cudaLaunchKernelEx(&cfg, grad_kernel<S, S>, pr, n);
    }
    head_sums_kernel<<<pr.H, 32>>>(pr.partial, dA, dskip, batch, pr.H, nc);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, const float* dy, float* dx, float* dB,
                      float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    Problem pr{};
    pr.x = x, pr.B = B, pr.C = C, pr.dt = dt, pr.A = A, pr.lam = lam, pr.theta = theta, pr.skip = skip, pr.dy = dy;
    pr.dx = dx, pr.dB = dB, pr.dC = dC, pr.ddt = ddt, pr.dlam = dlam, pr.dtheta = dtheta;
    pr.T = seq_len, pr.H = n_heads, pr.P = head_dim, pr.N = d_state, pr.nc = (seq_len + L - 1) / L;
    pr.pdiv = (unsigned)(((1ull << 31) + head_dim - 1) / head_dim);
    auto aligned = [](const void* p, uintptr_t bytes = 16) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; };
    pr.vec_p = head_dim % 4 == 0 && aligned(x) && aligned(dy);  // the scratch states: cudaMalloc'd, N x P each
    pr.vec_n = d_state % 4 == 0 && aligned(B) && aligned(C);
    pr.vec_i = d_state % 8 == 0 && aligned(theta);
    pr.pair_p = head_dim % 2 == 0 && aligned(dx, 8);
    pr.pair_n = aligned(dB, 8) && aligned(dC, 8);  // d_state is even
    const int widest = d_state > head_dim ? d_state : head_dim;
    if (widest <= 16)
        run<16>(pr, batch, dA, dskip);
    else if (widest <= 32)
        run<32>(pr, batch, dA, dskip);
    else if (widest <= 64)
        run<64>(pr, batch, dA, dskip);
    else
        run<128>(pr, batch, dA, dskip);
}
