// mamba3_scan reference: chunked form on tensor cores (3xTF32), one block per (b, h, column tile,
// chunk), the carried state passed between the chunks of a head by a decoupled look-back (H100,
// `harness bench`: 137.1 us against 139.7 us with the staging's indices computed afresh per copy
// and the agg read back from the L2 after the walk (notes, "Staging by fixed column groups" and
// "The agg read back during the walk"); 139.6 us against 144.0 us with its flags behind
// sequentially consistent fences (notes, "Release and acquire flags"); 142.7 us against 148.4 us
// with the angles' accurate sincosf (notes, "Sincos by the MUFU"; timed before angles past 2^17
// went to sincosf); 147.7 us against 153.9 us with every thread fencing before a flag (notes, "One
// fence per publication"); H200: 144 us against 148 us for y stored one float at a time (notes,
// "Paired `y` stores"); 149 us against 156 us at 3 blocks per SM (notes, "Four blocks per SM");
// earlier 155 us against 158 us for the walk one chunk at a time (notes, "The look-back's parts, and a
// windowed look-back"), 158 us against 195 us before the running rotation
// without bank conflicts (notes, "The running rotation's bank conflicts"), 196 us against 207 us
// at 2 blocks per SM (notes, "Three blocks per SM") and 222 us with 4-byte staging (notes,
// "16-byte staging"), each step timed against the one before;
// in an earlier run the step-by-step solutions/mamba3_scan/state_in_registers_single_pass.cu, the
// reference before, 394 us and solutions/mamba3_scan/chunked_3xtf32.cu, the same math with each
// head's chunks walked in order, 931 us).
//
// Math: as in solutions/mamba3_scan/chunked_3xtf32.cu (spec.md, "Why it can be scanned in parallel"). Chunks of
// L = 64 steps; angles Phi_t from each chunk's start (a running product of unit complex
// numbers); Bg = R(-Phi) B, Cr = R(-Phi) C; cl_t = sum_{r=t0..t} dt_r A; bn_t = (1 - lam_t) dt_t
// folds the trapezoid's beta write into the column before it. With h_in = h_{t0-1} and
// G = h_in + bn_t0 B_{t0-1} x_{t0-1}^T:
//   y_t   = sum_{s<=t} (Cr_t . Bg_s) exp(cl_t - cl_s) e_ts x_s + exp(cl_t) Cr_t^T G + skip x_t
//   h_end = M(h_in) + agg,   M(h) = exp(cl_end) R(Phi_end) h,
//   agg   = R(Phi_end) ( exp(cl_end) bn_t0 B_{t0-1} x_{t0-1}^T + sum_s exp(cl_end - cl_s) e_end,s Bg_s x_s^T )
// so a chunk's end state is an affine map of its start state whose map (one decay and one
// rotation per row pair) and offset `agg` the chunk computes alone.
// The angles' sin and cos come from the MUFU (`sincos_turn`), and the chunk's R(Phi_end), the one
// rotation the carry multiplies from chunk to chunk, is scaled to unit length: the MUFU's length
// error is biased inward and would otherwise compound over the chunks (notes, "Sincos by the MUFU").
// All four products (scores, masked scores x X, exp(cl) Cr x G, the state update) are mma.sync m16n8k8 TF32
// with split operands (a = hi + lo, hi truncated to tf32, three mma per product): one plain
// TF32 product fails the tolerance (notes, "Candidates").
//
// Look-back. Each block draws a ticket from an atomic counter (blocks are neither co-resident
// nor started in blockIdx order); tickets run chunk-major (chunk c of every unit, then c + 1),
// so a block only waits on blocks with smaller tickets, which already run: no deadlock for any
// grid. A block publishes its (map, agg) with flag AGGREGATE right after its state update,
// computes the intra-chunk outputs, then walks back over its predecessors: an INCLUSIVE one
// (the state at its end) ends the walk, an AGGREGATE one is folded in through its map. The walk
// goes by windows of LB_WIN chunks: warp 0 reads their flags at once and waits until every flag up
// to the first inclusive one is set, then the window's maps are composed and its states folded. It
// then publishes its own inclusive state and reads out C^T G. Data is written by every thread;
// after a barrier thread 0 alone sets the flag with a release store, so the other warps go on (the
// pattern of a grid barrier: the barrier orders the block's stores before thread 0's release). A
// walk's warp 0 reads the flags with acquire loads, before the barrier after which every thread loads the
// predecessors' data. The flag word carries the launch's epoch
// (64-bit: epoch << 2 | flag), so words of earlier launches read as "not ready" and nothing is
// cleared between calls; the block drawing the last ticket puts the counter back to 0.
//
// Layout. The state tile (d_state x 64 or 16 columns) lives in mma accumulator fragments whose
// rows are permuted so that a thread holds both rows 2i, 2i+1 of a pair (rows g, g+8 of a
// 16-row fragment are state rows 2g, 2g+1): the end rotation, the maps and the look-back are
// thread-local, and the scratch holds each thread's fragment as float4s (coalesced). Shared memory
// (55.3 KB at the official size, four blocks per SM): B, C and x of the chunk, B's region taken in
// turn by the scores W, the look-back's composed maps and G, x's rows (skip x added after W X) by
// the block's own agg, copied back during the walk; the angles never enter it (each thread loads
// its steps' angles into registers for the running rotation).
//
// Scratch: agg and inclusive states, maps and flags per (unit, chunk), cached cudaMallocs
// capped at 256 MB; sizes needing more run as several launches over groups of units.
// At the official size: 32 units x 64 chunks x (2 x 16 KB + 0.5 KB) = 68 MB.
//
// Every size is served: d_state is padded to NP (16, 32, 64, 128) rows with zero B, C and
// angles; columns past head_dim get x = 0 and are not stored; steps past seq_len have dt = 0
// (no decay, no write) and are not stored.

#include <cuda_runtime.h>
#include <stdint.h>

// PHASE_AT(k, t): a timestamp of phase k taken by thread t, and PHASE_VALUE(k, v): v in slot k,
// for reference/mamba3_scan_phases.cu, which defines them (reference/phase_stamps.cuh); nothing in
// a normal build.
#ifndef PHASE_AT
#define PHASE_AT(k, t)
#define PHASE_VALUE(k, v)
#endif

namespace {

constexpr int L = 64;  // chunk length (time steps)
constexpr int WARPS = 8;
constexpr int THREADS = 32 * WARPS;
constexpr unsigned long long FLAG_AGGREGATE = 1ull, FLAG_INCLUSIVE = 2ull;
constexpr size_t SCRATCH_CAP = size_t(256) << 20;
constexpr int LB_WIN = 8;  // look-back window: chunks whose flags are read at once

constexpr int cmax(int a, int b) { return a > b ? a : b; }

template <int NP, int PT>
struct Cfg {
    static constexpr int NPP = NP / 2;    // row pairs
    static constexpr int NT = PT / 8;     // 8-column mma tiles
    static constexpr int SB = NP + 4;     // row stride of B, C; columns NP .. NP+3 hold the segment totals
    static constexpr int SX = PT + 8;     // row stride of x and G: conflict-free B fragments
    static constexpr int SW = L + 4;      // row stride of the scores
    // one region in turn: B rows t0-1 .. t0+L-1 (to the scores); the masked scores W [L][SW]
    // (scores to W X); the look-back's composed maps; G [NP][SX] (after the look-back)
    static constexpr int OFF_B = 0, OFF_W = 0, OFF_CMAP = 0, OFF_G = 0;
    static constexpr int REGION = cmax((L + 1) * SB, cmax(NP * SX, L * SW));
    static constexpr int OFF_C = REGION;                    // C rows t0 .. t0+L-1
    static constexpr int OFF_X = OFF_C + L * SB;            // x rows t0-1 .. t0+L-1
    static constexpr int OFF_VEC = OFF_X + (L + 1) * SX;    // dt, lam, cl, d, gamma, e, wend: [7][L]
    static constexpr int OFF_END = OFF_VEC + 7 * L;         // end rotation per pair: cos, sin
    static constexpr int OFF_MISC = OFF_END + 2 * NPP;      // ticket, flag
    static constexpr int FLOATS = OFF_MISC + 4;
    static constexpr int TPP = THREADS / NPP;               // threads per pair in the angle scan
    static constexpr int SEG = L / TPP;                     // steps per thread in the angle scan
    // state tiles (16 rows x 8 columns): TPW consecutive ones per warp, all in one row block
    static constexpr int STATE_TILES = (NP / 16) * NT;
    static constexpr int TPW = STATE_TILES >= WARPS ? STATE_TILES / WARPS : 1;
    static constexpr int STATE = NP * PT;                   // floats of one state in the scratch
    static constexpr int MAP = 4 * NPP;                     // decay, cos, sin, 0 per pair
    // output tiles: NT >= 4: row blocks {w&1, 3-(w&1)} (balances the triangle) x NT/4 columns
    static constexpr int RBW = NT >= 4 ? 2 : 1;
    static constexpr int QN = NT >= 4 ? NT / 4 : 1;
    static_assert(LB_WIN * NPP * 4 <= REGION, "the look-back's composed maps fit in the region");
    // the block's agg fits in x's rows t0 .. t0+L-1, free once every warp's W X is done
    static constexpr bool AGG_IN_X = STATE <= L * SX;
    static_assert((TPP - 1) * NPP <= 2 * (2 * L + 1), "the segment totals fit in the rows' padding");
    static_assert(OFF_B % 4 == 0 && OFF_C % 4 == 0 && OFF_X % 4 == 0 && SB % 4 == 0 &&
                      SX % 4 == 0, "16-byte staging");
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
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
// Rows r = 0 .. ROWS-1 of a tile staged from a tensor in the (b, t, h) layout: row r is at offset
// first + r * step floats (step = H times the row's width), valid for lo <= r < hi and columns below
// `cols`. 64-bit, since `first` is negative for row t0 - 1 of the first chunk.
struct RowRange {
    long long first, step;
    int lo, hi, cols;
};
// ROWS rows of COLS (padded) columns: copy(r, c, offset, ok, w) stages columns c .. c + w - 1 of
// row r, w = 4 (one 16-byte copy) when `wide`, else w = 1; ok: in range. When `wide`, a row's valid
// columns are a multiple of 4, so a 16-byte group is all in range or all out, and the shared row
// strides are multiples of 4 floats. Each thread keeps one column group and steps its rows by
// THREADS / (COLS / w), its offset by one 64-bit add a copy: with the row and column computed afresh
// from a flat index each 16-byte copy cost about thirty instructions (SASS).
template <int ROWS, int COLS, int W, class Copy>
__device__ __forceinline__ void stage_rows_w(const RowRange& rows, Copy copy) {
    constexpr int GROUPS = COLS / W, RSTEP = THREADS / GROUPS;
    static_assert(COLS % W == 0 && THREADS % GROUPS == 0, "a fixed column group per thread");
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
template <int ROWS, int COLS, class Copy>
__device__ __forceinline__ void stage_rows(bool wide, const RowRange& rows, Copy copy) {
    static_assert(COLS % 4 == 0, "whole 16-byte groups");
    if (wide)
        stage_rows_w<ROWS, COLS, 4>(rows, copy);
    else
        stage_rows_w<ROWS, COLS, 1>(rows, copy);
}
// kernel argument `wide`: which rows stage 16 bytes at a time (WIDE_P, WIDE_N), and whether y is
// stored a column pair (8 bytes) at a time (PAIR_Y)
constexpr unsigned WIDE_P = 1, WIDE_N = 2, PAIR_Y = 4;
// v.x at out[0] and, when has_second, v.y at out[1]: one 8-byte store when `paired` (out 8-byte aligned)
__device__ __forceinline__ void store_pair(float* out, float2 v, bool paired, bool has_second) {
    if (paired) {
        *reinterpret_cast<float2*>(out) = v;
    } else {
        out[0] = v.x;
        if (has_second) out[1] = v.y;
    }
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// v = hi + lo: hi is v with the 13 mantissa bits a tensor core ignores cleared (truncation, one
// LOP3), lo = v - hi is exact and goes in as it is (the tensor core reads its upper 19 bits).
// Rounding both halves with cvt.rna cost about ten instructions per element (an infinity test,
// a rounding add, a mask, a select, twice); truncation leaves at most 2^-20 |v| out of a product's
// operand instead of 2^-22, far inside the tolerance (notes).
template <int K>
__device__ __forceinline__ void split(const float (&v)[K], uint32_t (&hi)[K], uint32_t (&lo)[K]) {
#pragma unroll
    for (int i = 0; i < K; ++i) {
        hi[i] = __float_as_uint(v[i]) & 0xffffe000u;
        lo[i] = __float_as_uint(v[i] - __uint_as_float(hi[i]));
    }
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
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d += a*b in 3xTF32 from split operands, small terms first
__device__ __forceinline__ void mma3(float (&d)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4],
                                     const uint32_t (&bh)[2], const uint32_t (&bl)[2]) {
    mma_tf32(d, al, bh);
    mma_tf32(d, ah, bl);
    mma_tf32(d, ah, bh);
}

// The lower-triangle 16 x 8 tiles of an L x L matrix: 20 of them, tile s -> (row block, column tile).
__device__ __forceinline__ void tri_tile(int s, int& rb, int& nt) {
    rb = s < 2 ? 0 : s < 6 ? 1 : s < 12 ? 2 : 3;
    nt = s - rb * (rb + 1);
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

// Four blocks (32 warps) per SM up to d_state 64: 64 registers (80 bytes spilled) and 55.3 KB of
// shared memory; three blocks of 80 registers and 74.3 KB took 4 % more time (notes).
template <int NP, int PT>
__global__ void __launch_bounds__(THREADS, NP <= 64 ? 4 : 1)
lookback_kernel(const float* __restrict__ x, const float* __restrict__ B, const float* __restrict__ C,
                const float* __restrict__ dt, const float* __restrict__ A, const float* __restrict__ lam,
                const float* __restrict__ theta, const float* __restrict__ skip, float* __restrict__ y,
                int seq_len, int H, int P, int N, int ptiles, int unit_begin, int units, int nchunks,
                float* agg_buf, float* incl_buf, float* map_buf, unsigned long long* status,
                unsigned long long* counter, unsigned long long epoch, unsigned wide) {
    using K = Cfg<NP, PT>;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float* rB = sm + K::OFF_B + K::SB;  // row t0 (row t0-1 is just above)
    float* rC = sm + K::OFF_C;
    float* G = sm + K::OFF_G;
    float* rX = sm + K::OFF_X + K::SX;  // row t0
    float* W = sm + K::OFF_W;
    float* v_dt = sm + K::OFF_VEC;
    float* v_lam = v_dt + L;
    float* v_cl = v_lam + L;
    float* v_d = v_cl + L;
    float* v_ga = v_d + L;
    float* v_e = v_ga + L;
    float* v_wend = v_e + L;
    float* end_c = sm + K::OFF_END;
    float* end_s = end_c + K::NPP;
    unsigned* misc = reinterpret_cast<unsigned*>(sm + K::OFF_MISC);
    // the running rotation's segment totals, float2 s: in the 4 padding columns of B's and C's rows
    auto seg_total = [&](int s) {
        const int row = s >> 1;
        float* base = row <= L ? sm + K::OFF_B + row * K::SB : sm + K::OFF_C + (row - L - 1) * K::SB;
        return reinterpret_cast<float2*>(base + NP + 2 * (s & 1));
    };

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;  // mma fragment coordinates

    if (tid == 0) {
        const unsigned long long tickets = (unsigned long long)units * nchunks;
        const unsigned long long ticket = atomicAdd(counter, 1ull);
        if (ticket == tickets - 1) atomicExch(counter, 0ull);  // ready for the next launch
        misc[0] = (unsigned)ticket;
    }
    __syncthreads();
    const int ticket = (int)misc[0];
    PHASE_AT(0, 0);
    PHASE_VALUE(12, ticket + 1);
    const int c = ticket / units, u = ticket % units;  // chunk-major
    const int unit = unit_begin + u;
    const int pt = unit % ptiles, bh = unit / ptiles;
    const int h = bh % H, b = bh / H;
    const int p0 = pt * PT, t0 = c * L;
    const int npairs = N / 2;
    const float A_h = A[h], skip_h = skip[h];
    auto row_of = [&](int t) { return (b * seq_len + t) * H + h; };  // (b, t, h) row, fits in int
    const size_t slot = (size_t)u * nchunks + c;

    // ---- the angles of this thread's steps of the running rotation (TPP threads per pair, SEG
    // steps each) straight into registers, 0 (no turn) out of range; issued before the staging
    const int pair = tid % K::NPP, part = tid / K::NPP, t_begin = part * K::SEG;
    float th[K::SEG];
#pragma unroll
    for (int i = 0; i < K::SEG; ++i) {
        const int t = t0 + t_begin + i;
        th[i] = t < seq_len && pair < npairs ? __ldg(theta + (size_t)row_of(t) * npairs + pair) : 0.f;
    }

    // ---- raw inputs of the chunk into shared memory; zero where out of range. 16-byte copies where
    // the rows allow them (`wide`): with 4-byte ones the staging was a quarter of the kernel's
    // instructions (Nsight Compute, SASS counts).
    {
        const long long row_prev = (long long)(b * seq_len + t0 - 1) * H + h;  // (b, t0 - 1, h)
        const int lo = t0 == 0;  // row t0 - 1 is there from the second chunk on
        const RowRange b_rows{row_prev * N, (long long)H * N, lo, seq_len - t0 + 1, N};  // t0-1 .. t0+L-1
        const RowRange c_rows{(row_prev + H) * N, (long long)H * N, 0, seq_len - t0, N};   // t0 .. t0+L-1
        const RowRange x_rows{row_prev * P + p0, (long long)H * P, lo, seq_len - t0 + 1, P - p0};  // t0-1 ..
        stage_rows<L + 1, NP>(wide & WIDE_N, b_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_B + r * K::SB + n, ok ? B + o : B, ok);
        });
        stage_rows<L, NP>(wide & WIDE_N, c_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, rC + r * K::SB + n, ok ? C + o : C, ok);
        });
        stage_rows<L + 1, PT>(wide & WIDE_P, x_rows, [&](int r, int p, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_X + r * K::SX + p, ok ? x + o : x, ok);
        });
    }
    for (int f = tid; f < L; f += THREADS) {
        const bool ok = t0 + f < seq_len;
        copy4(v_dt + f, ok ? dt + row_of(t0 + f) : dt, ok);
        copy4(v_lam + f, ok ? lam + row_of(t0 + f) : lam, ok);
    }
    copy_commit();
    copy_wait_all();
    __syncthreads();
    PHASE_AT(1, 0);

    // ---- setup 1: decays (warp 0)
    if (warp == 0) {
        const float a0 = v_dt[lane] * A_h, a1 = v_dt[lane + 32] * A_h;
        float s0 = a0, s1 = a1;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float u0 = __shfl_up_sync(0xffffffffu, s0, o), u1 = __shfl_up_sync(0xffffffffu, s1, o);
            if (lane >= o) { s0 += u0; s1 += u1; }
        }
        s1 += __shfl_sync(0xffffffffu, s0, 31);
        const float cl_end = __shfl_sync(0xffffffffu, s1, 31);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            const float cl = k ? s1 : s0;
            const float ga = v_lam[t] * v_dt[t];
            const float bn_next = t + 1 < L ? (1.f - v_lam[t + 1]) * v_dt[t + 1] : 0.f;
            const float e = ga + bn_next;
            v_cl[t] = cl;
            v_d[t] = expf(cl);
            v_ga[t] = ga;
            v_e[t] = e;
            v_wend[t] = expf(cl_end - cl) * (t == L - 1 ? ga : e);
        }
    }

    // ---- setup 2: running rotation per pair (TPP threads per pair, SEG steps each), B and C
    // turned in place into Bg = R(-Phi) B, Cr = R(-Phi) C. The pairs lie side by side in a warp
    // (pair = tid % NPP), so that a warp's accesses to one step's row are consecutive words (a
    // pair's segments on consecutive lanes read rows 8 steps apart, in the same banks). Three
    // passes, rotations commuting: each segment's running product, kept in registers; the totals
    // of the segments before a thread's own, through shared memory; that offset on every step as
    // its rows are turned.
    {
        float pc = 1.f, ps = 0.f, rc[K::SEG], rs[K::SEG];
#pragma unroll
        for (int i = 0; i < K::SEG; ++i) {
            float s, co;
            sincos_turn(th[i], &s, &co);
            const float nc = pc * co - ps * s, ns = pc * s + ps * co;
            pc = nc;
            ps = ns;
            rc[i] = pc;
            rs[i] = ps;
        }
        if (part < K::TPP - 1) *seg_total(part * K::NPP + pair) = make_float2(pc, ps);
        __syncthreads();
        float oc = 1.f, os = 0.f;  // the segments before this one
        for (int q = 0; q < part; ++q) {
            const float2 cs = *seg_total(q * K::NPP + pair);
            const float nc = oc * cs.x - os * cs.y, ns = oc * cs.y + os * cs.x;
            oc = nc;
            os = ns;
        }
#pragma unroll
        for (int i = 0; i < K::SEG; ++i) {
            const int t = t_begin + i;
            pc = oc * rc[i] - os * rs[i];
            ps = oc * rs[i] + os * rc[i];
            float* bt = rB + t * K::SB + 2 * pair;
            float* ct = rC + t * K::SB + 2 * pair;
            const float b0 = bt[0], b1 = bt[1], c0 = ct[0], c1 = ct[1];
            bt[0] = pc * b0 + ps * b1;
            bt[1] = pc * b1 - ps * b0;
            ct[0] = pc * c0 + ps * c1;
            ct[1] = pc * c1 - ps * c0;
        }
        if (part == K::TPP - 1) {  // the chunk's rotation scaled to unit length: the MUFU's inward length
            // bias (about -8e-8 per step at |theta| near 1) then does not compound from chunk to chunk
            const float n = rsqrtf(fmaf(pc, pc, ps * ps));
            end_c[pair] = pc * n;
            end_s[pair] = ps * n;
        }
    }
    __syncthreads();
    PHASE_AT(2, 0);

    // ---- state update: agg = R(Phi_end) (d_end bn0 B_{t0-1} x_{t0-1}^T + Bw^T X), rows permuted
    // (fragment rows g, g+8 = state rows r0+2g, r0+2g+1); published at once
    const int s_first = warp * K::TPW;
    const bool has_state = s_first < K::STATE_TILES;
    const int s_rb = s_first / K::NT, s_nt0 = s_first % K::NT;
    const int my_pair = s_rb * 8 + g;  // state rows 2 my_pair, 2 my_pair + 1
    const float bn0 = (1.f - v_lam[0]) * v_dt[0];
    float agg[K::TPW][4];
    // B_{t0-1} (not rotated) of this thread's pair, kept for G: W, the maps and G go over B's rows
    const float* bprev = sm + K::OFF_B;
    const float bp0 = has_state ? bprev[2 * my_pair] : 0.f, bp1 = has_state ? bprev[2 * my_pair + 1] : 0.f;
    float* my_agg = (c == 0 ? incl_buf : agg_buf) + slot * K::STATE;  // chunk 0: h_in = 0, agg is inclusive
    if (has_state) {
#pragma unroll
        for (int q = 0; q < K::TPW; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i) agg[q][i] = 0.f;
        const int r0 = s_rb * 16;
#pragma unroll 2
        for (int k0 = 0; k0 < L; k0 += 8) {
            const float w0 = v_wend[k0 + tg], w1 = v_wend[k0 + tg + 4];
            const float* ar = rB + (k0 + tg) * K::SB + r0 + 2 * g;  // A[m][k = t] = Bg[t][row of m] * wend[t]
            const float a[4] = {ar[0] * w0, ar[1] * w0, ar[4 * K::SB] * w1, ar[4 * K::SB + 1] * w1};
            uint32_t ah[4], al[4];
            split(a, ah, al);
#pragma unroll
            for (int q = 0; q < K::TPW; ++q) {
                const float* br = rX + (k0 + tg) * K::SX + (s_nt0 + q) * 8 + g;
                const float bb[2] = {br[0], br[4 * K::SX]};
                uint32_t bh2[2], bl2[2];
                split(bb, bh2, bl2);
                mma3(agg[q], ah, al, bh2, bl2);
            }
        }
        const float d_end = v_d[L - 1], co = end_c[my_pair], sn = end_s[my_pair];
        const float w_prev = d_end * bn0;
        const float* xprev = sm + K::OFF_X;
        const float be = w_prev * bp0, bo = w_prev * bp1;
#pragma unroll
        for (int q = 0; q < K::TPW; ++q) {
            const int col = (s_nt0 + q) * 8 + 2 * tg;
#pragma unroll
            for (int j = 0; j < 2; ++j) {  // (agg[q][j], agg[q][j + 2]): rows (even, odd) of column col + j
                const float e0 = agg[q][j] + be * xprev[col + j], e1 = agg[q][j + 2] + bo * xprev[col + j];
                agg[q][j] = co * e0 - sn * e1;
                agg[q][j + 2] = sn * e0 + co * e1;
            }
            __stcg(reinterpret_cast<float4*>(my_agg) + (s_first + q) * 32 + lane,
                   make_float4(agg[q][0], agg[q][1], agg[q][2], agg[q][3]));
        }
    }
    for (int i = tid; i < K::NPP; i += THREADS)
        __stcg(reinterpret_cast<float4*>(map_buf + slot * K::MAP) + i,
               make_float4(v_d[L - 1], end_c[i], end_s[i], 0.f));
    __syncthreads();
    if (tid == 0) {  // the barrier, then one release for the block's stores (as a grid barrier does)
        set_status(status + slot, (epoch << 2) | (c == 0 ? FLAG_INCLUSIVE : FLAG_AGGREGATE));
    }
    PHASE_AT(3, 0);

    // ---- scores W = (Cr Bg^T) * exp(cl_i - cl_j) * e, lower triangle: 20 tiles of 16 x 8
    // (tri_tile); held in registers until every warp is done with B, whose rows W takes
    constexpr int SCORE_Q = (20 + WARPS - 1) / WARPS;
    float sacc[SCORE_Q][4];
#pragma unroll
    for (int q = 0; q < SCORE_Q; ++q) {
        const int s = warp + WARPS * q;
#pragma unroll
        for (int i = 0; i < 4; ++i) sacc[q][i] = 0.f;
        if (s < 20) {
            int rb, nt;
            tri_tile(s, rb, nt);
#pragma unroll 4
            for (int k0 = 0; k0 < NP; k0 += 8) {
                const float* ar = rC + (rb * 16 + g) * K::SB + k0 + tg;
                const float* br = rB + (nt * 8 + g) * K::SB + k0 + tg;
                const float a[4] = {ar[0], ar[8 * K::SB], ar[4], ar[8 * K::SB + 4]};
                const float bb[2] = {br[0], br[4]};
                uint32_t ah[4], al[4], bh2[2], bl2[2];
                split(a, ah, al);
                split(bb, bh2, bl2);
                mma3(sacc[q], ah, al, bh2, bl2);
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < SCORE_Q; ++q) {
        const int s = warp + WARPS * q;
        if (s < 20) {
            int rb, nt;
            tri_tile(s, rb, nt);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = rb * 16 + g + (i >= 2 ? 8 : 0);
                const int j = nt * 8 + 2 * tg + (i & 1);
                float v = 0.f;
                if (j <= r) v = sacc[q][i] * __expf(v_cl[r] - v_cl[j]) * (j == r ? v_ga[j] : v_e[j]);
                W[r * K::SW + j] = v;
            }
        }
    }
    __syncthreads();
    PHASE_AT(4, 0);

    // ---- intra-chunk outputs: yacc = W X (W is zero right of the diagonal)
    int rbs[K::RBW];
    if (K::RBW == 2) {
        rbs[0] = warp & 1;
        rbs[K::RBW - 1] = 3 - (warp & 1);
    } else {
        rbs[0] = warp & 3;
    }
    const int y_nt0 = K::RBW == 2 ? (warp >> 1) * K::QN : (warp >> 2);
    float yacc[K::RBW][K::QN][4];
    // f(k, q, half, r, p) for each pair yacc[k][q][2 half], yacc[k][q][2 half + 1]: row r, columns p, p + 1
    auto each_output_pair = [&](auto f) {
#pragma unroll
        for (int k = 0; k < K::RBW; ++k)
#pragma unroll
            for (int q = 0; q < K::QN; ++q)
#pragma unroll
                for (int half = 0; half < 2; ++half)
                    f(k, q, half, rbs[k] * 16 + g + 8 * half, (y_nt0 + q) * 8 + 2 * tg);
    };
#pragma unroll
    for (int k = 0; k < K::RBW; ++k)
#pragma unroll
        for (int q = 0; q < K::QN; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i) yacc[k][q][i] = 0.f;
#pragma unroll
    for (int k = 0; k < K::RBW; ++k) {
        const int r0 = rbs[k] * 16;
        for (int k0 = 0; k0 < r0 + 16; k0 += 8) {
            const float* ar = W + (r0 + g) * K::SW + k0 + tg;
            const float a[4] = {ar[0], ar[8 * K::SW], ar[4], ar[8 * K::SW + 4]};
            uint32_t ah[4], al[4];
            split(a, ah, al);
#pragma unroll
            for (int q = 0; q < K::QN; ++q) {
                const float* br = rX + (k0 + tg) * K::SX + (y_nt0 + q) * 8 + g;
                const float bb[2] = {br[0], br[4 * K::SX]};
                uint32_t bh2[2], bl2[2];
                split(bb, bh2, bl2);
                mma3(yacc[k][q], ah, al, bh2, bl2);
            }
        }
    }

    // skip x now, while x is in shared memory: the look-back takes x's rows for its agg
    each_output_pair([&](int k, int q, int half, int r, int p) {
        yacc[k][q][2 * half] += skip_h * rX[r * K::SX + p];
        yacc[k][q][2 * half + 1] += skip_h * rX[r * K::SX + p + 1];
    });
    PHASE_AT(5, 0);  // warp 0's W X done
    // ---- look-back: h_in from the predecessors, then this chunk's inclusive state, and
    // G = h_in + bn0 B_{t0-1} x_{t0-1}^T into shared memory (the region of the angles and W)
    float hin[K::TPW][4];
#pragma unroll
    for (int q = 0; q < K::TPW; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i) hin[q][i] = 0.f;
    if (c > 0) {
        const size_t unit_slots = (size_t)u * nchunks;
        // the composed map in front of each chunk of a window, per pair: over W, which every warp
        // is done with at the first barrier below
        float4* cmap = reinterpret_cast<float4*>(sm + K::OFF_CMAP);
        float4 carried = make_float4(1.f, 1.f, 0.f, 0.f);  // thread i < NPP: maps of the windows folded so far
        for (int j0 = c - 1;; j0 -= LB_WIN) {
            if (warp == 0) {
                const bool valid = lane < LB_WIN && lane <= j0;
                const unsigned long long* word = status + unit_slots + (j0 - lane);
                unsigned answer;
                for (;;) {
                    const unsigned long long st = valid ? read_status(word) : 0ull;
                    const bool ready = valid && (st >> 2) == epoch;
                    const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
                    const unsigned incl_mask = __ballot_sync(0xffffffffu, ready && (st & 3ull) == FLAG_INCLUSIVE);
                    const int prefix = __ffs(~ready_mask) - 1;    // flags set from lane 0 on (lane 31 never is)
                    const int first_incl = __ffs(incl_mask) - 1;  // -1: none
                    if (first_incl >= 0 && first_incl < prefix) {  // an inclusive one, every flag before it set
                        answer = (unsigned)(first_incl + 1) | 0x100u;
                        break;
                    }
                    if (prefix >= LB_WIN) {  // a whole window of aggregates (chunk 0, inclusive, is further)
                        answer = LB_WIN;
                        break;
                    }
                }
                if (lane == 0) misc[1] = answer;
            }
            __syncthreads();
            if (K::AGG_IN_X && j0 == c - 1 && has_state) {
                // every warp's W X is done: this thread's agg from the L2 into x's rows, while the
                // walk goes on, for the inclusive state after it
#pragma unroll
                for (int q = 0; q < K::TPW; ++q) {
                    const int f = ((s_first + q) * 32 + lane) * 4;
                    copy16(rX + f, my_agg + f, true);
                }
                copy_commit();
            }
            const unsigned answer = misc[1];
            const int depth = (int)(answer & 0xffu);
            const bool ends = answer & 0x100u;
            PHASE_AT(9, 0);                         // the window's flags read
            PHASE_VALUE(11, c - j0 + depth - 1);  // chunks walked so far
            for (int f = tid; f < depth * K::NPP; f += THREADS) {
                const int k = f / K::NPP, i = f - k * K::NPP;
                cmap[f] = __ldcg(reinterpret_cast<const float4*>(map_buf + (unit_slots + j0 - k) * K::MAP) + i);
            }
            __syncthreads();
            if (tid < K::NPP) {
                float4 m = carried;
                for (int k = 0; k < depth; ++k) {
                    const float4 q = cmap[k * K::NPP + tid];
                    cmap[k * K::NPP + tid] = m;
                    m = make_float4(m.x * q.x, m.y * q.y - m.z * q.z, m.y * q.z + m.z * q.y, 0.f);
                }
                carried = m;
            }
            __syncthreads();
            if (has_state) {
                // no barrier between chunks; two chunks per iteration, so that their loads can overlap
                // (155 us against 157 us one chunk at a time)
#pragma unroll 2
                for (int k = 0; k < depth; ++k) {
                    const float4* src = reinterpret_cast<const float4*>(
                        (ends && k == depth - 1 ? incl_buf : agg_buf) + (unit_slots + j0 - k) * K::STATE);
                    float4 v[K::TPW];
#pragma unroll
                    for (int q = 0; q < K::TPW; ++q) v[q] = __ldcg(src + (s_first + q) * 32 + lane);
                    const float4 m = cmap[k * K::NPP + my_pair];
#pragma unroll
                    for (int q = 0; q < K::TPW; ++q) {
                        const float ev[2] = {v[q].x, v[q].y}, od[2] = {v[q].z, v[q].w};
#pragma unroll
                        for (int i = 0; i < 2; ++i) {
                            hin[q][i] += m.x * (m.y * ev[i] - m.z * od[i]);
                            hin[q][i + 2] += m.x * (m.z * ev[i] + m.y * od[i]);
                        }
                    }
                }
            }
            __syncthreads();  // cmap and misc[1] are read by all before they change
            if (ends) break;
        }
        PHASE_AT(10, 0);
        if (has_state) {
            const float d_end = v_d[L - 1], co = end_c[my_pair], sn = end_s[my_pair];
            float* my_incl = incl_buf + slot * K::STATE;
            if (K::AGG_IN_X) copy_wait_all();  // this thread's own copies: no barrier
#pragma unroll
            for (int q = 0; q < K::TPW; ++q) {
                // agg back from where this thread published it: 16 registers fewer across W X and
                // the look-back, which at 80 registers would otherwise spill
                const float4 av = K::AGG_IN_X
                                      ? reinterpret_cast<const float4*>(rX)[(s_first + q) * 32 + lane]
                                      : __ldcg(reinterpret_cast<const float4*>(my_agg) + (s_first + q) * 32 + lane);
                const float a[4] = {av.x, av.y, av.z, av.w};
                float o[4];
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    o[i] = a[i] + d_end * (co * hin[q][i] - sn * hin[q][i + 2]);
                    o[i + 2] = a[i + 2] + d_end * (sn * hin[q][i] + co * hin[q][i + 2]);
                }
                __stcg(reinterpret_cast<float4*>(my_incl) + (s_first + q) * 32 + lane,
                       make_float4(o[0], o[1], o[2], o[3]));
            }
        }
        __syncthreads();
        if (tid == 0) {
            set_status(status + slot, (epoch << 2) | FLAG_INCLUSIVE);
        }
        PHASE_AT(6, 0);
    } else {
        __syncthreads();  // G goes over W, which W X reads until every warp is done
    }
    if (has_state) {
        const float* xprev = sm + K::OFF_X;
        const float be = bn0 * bp0, bo = bn0 * bp1;
#pragma unroll
        for (int q = 0; q < K::TPW; ++q) {
            const int col = (s_nt0 + q) * 8 + 2 * tg;
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                G[(2 * my_pair) * K::SX + col + i] = hin[q][i] + be * xprev[col + i];
                G[(2 * my_pair + 1) * K::SX + col + i] = hin[q][i + 2] + bo * xprev[col + i];
            }
        }
    }
    __syncthreads();
    PHASE_AT(7, 0);

    // ---- read-out: yacc += (d Cr) G, then y = yacc
#pragma unroll 2
    for (int k0 = 0; k0 < NP; k0 += 8) {
        uint32_t bh2[K::QN][2], bl2[K::QN][2];
#pragma unroll
        for (int q = 0; q < K::QN; ++q) {
            const float* br = G + (k0 + tg) * K::SX + (y_nt0 + q) * 8 + g;
            const float bb[2] = {br[0], br[4 * K::SX]};
            split(bb, bh2[q], bl2[q]);
        }
#pragma unroll
        for (int k = 0; k < K::RBW; ++k) {
            const int r0 = rbs[k] * 16;
            const float d_lo = v_d[r0 + g], d_hi = v_d[r0 + g + 8];
            const float* ar = rC + (r0 + g) * K::SB + k0 + tg;
            const float a[4] = {ar[0] * d_lo, ar[8 * K::SB] * d_hi, ar[4] * d_lo, ar[8 * K::SB + 4] * d_hi};
            uint32_t ah[4], al[4];
            split(a, ah, al);
#pragma unroll
            for (int q = 0; q < K::QN; ++q) mma3(yacc[k][q], ah, al, bh2[q], bl2[q]);
        }
    }
    each_output_pair([&](int k, int q, int half, int r, int p) {
        if (t0 + r >= seq_len || p0 + p >= P) return;
        const float2 v = make_float2(yacc[k][q][2 * half], yacc[k][q][2 * half + 1]);
        store_pair(y + (size_t)row_of(t0 + r) * P + p0 + p, v, wide & PAIR_Y, p0 + p + 1 < P);
    });
    PHASE_AT(8, 0);
}

// Scratch kept between calls: the ticket counter, one flag word per slot (unit, chunk), then
// the states and maps of the slots. The counter and the flags keep their places whatever the
// sizes of a call (only the data region's layout varies, and data is always written before its
// flag in the same launch); flags start at epoch 0, which no launch uses.
struct Scratch {
    unsigned long long* words = nullptr;  // counter, then `slots` flags
    float* data = nullptr;
    size_t slots = 0, data_floats = 0;
    unsigned long long epoch = 0;  // launches so far: each launch gets its own
};
Scratch scratch;  // shared by every instantiation

// Makes room for `slots` flags and `floats` of data; false when out of memory.
bool reserve(size_t slots, size_t floats) {
    Scratch& sc = scratch;
    if (slots > sc.slots) {
        if (sc.words) cudaFree(sc.words);
        sc.slots = 0;
        if (cudaMalloc(&sc.words, (slots + 1) * sizeof(unsigned long long)) != cudaSuccess) {
            sc.words = nullptr;
            return false;
        }
        cudaMemset(sc.words, 0, (slots + 1) * sizeof(unsigned long long));
        sc.slots = slots;
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

template <int NP, int PT>
void launch(const float* x, const float* B, const float* C, const float* dt, const float* A, const float* lam,
            const float* theta, const float* skip, float* y, int batch, int seq_len, int H, int P, int N) {
    using K = Cfg<NP, PT>;
    const size_t smem = sizeof(float) * K::FLOATS;
    static bool attr_set = false;
    if (!attr_set) {
        cudaFuncSetAttribute(lookback_kernel<NP, PT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
        attr_set = true;
    }
    const int ptiles = (P + PT - 1) / PT;
    const int nchunks = (seq_len + L - 1) / L;
    const int total_units = batch * H * ptiles;
    const size_t slot_floats = 2 * K::STATE + K::MAP;
    const size_t per_unit = (sizeof(float) * slot_floats + sizeof(unsigned long long)) * nchunks;
    int group = (int)(SCRATCH_CAP / per_unit);
    if (group < 1) group = 1;
    if (group > total_units) group = total_units;
    const size_t slots = (size_t)group * nchunks;
    if (!reserve(slots, slots * slot_floats)) return;  // out of memory: y stays unwritten, the check says so
    Scratch& sc = scratch;
    float* agg_buf = sc.data;
    float* incl_buf = agg_buf + slots * K::STATE;
    float* map_buf = incl_buf + slots * K::STATE;
    unsigned long long* counter = sc.words;
    unsigned long long* status = sc.words + 1;
    auto aligned = [](const void* p, uintptr_t bytes = 16) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; };
    const unsigned wide = (P % 4 == 0 && aligned(x) ? WIDE_P : 0) |
                          (N % 4 == 0 && aligned(B) && aligned(C) ? WIDE_N : 0) |
                          (P % 2 == 0 && aligned(y, 8) ? PAIR_Y : 0);
    for (int begin = 0; begin < total_units; begin += group) {
        const int units = total_units - begin < group ? total_units - begin : group;
        ++sc.epoch;
        lookback_kernel<NP, PT><<<units * nchunks, THREADS, smem>>>(
            x, B, C, dt, A, lam, theta, skip, y, seq_len, H, P, N, ptiles, begin, units, nchunks, agg_buf,
            incl_buf, map_buf, status, counter, sc.epoch, wide);
    }
}

template <int NP>
void launch_np(const float* x, const float* B, const float* C, const float* dt, const float* A, const float* lam,
               const float* theta, const float* skip, float* y, int batch, int seq_len, int H, int P, int N) {
    if (P <= 16)
        launch<NP, 16>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, H, P, N);
    else
        launch<NP, 64>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, H, P, N);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, float* y, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    if (d_state <= 16)
        launch_np<16>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (d_state <= 32)
        launch_np<32>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (d_state <= 64)
        launch_np<64>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else
        launch_np<128>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
}
