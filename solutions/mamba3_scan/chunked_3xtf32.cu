// mamba3_scan, chunked form on tensor cores with split-precision (3xTF32) products.
//
// Math (spec.md, "Why it can be scanned in parallel"). Time is cut into chunks of
// L = 64 steps. Inside a chunk starting at t0, angles run from the chunk start:
// Phi_t = theta_t0 + ... + theta_t (kept as a running product of unit complex
// numbers, so its error does not grow with |Phi|), and the rotated vectors
// Bg_t = R(-Phi_t) B_t, Cr_t = R(-Phi_t) C_t turn the recurrence into a scalar-decay one:
//   g_t = alpha_t g_{t-1} + gamma_t Bg_t x_t^T + beta_t Bg_{t-1} x_{t-1}^T,   y_t = Cr_t^T g_t + skip x_t.
// With cl_t = sum_{r=t0..t} dt_r A (so the decay from s to t is exp(cl_t - cl_s)) and
// beta_t / alpha_t = (1 - lam_t) dt_t =: bn_t, the beta write of step s+1 folds into
// column s of the decay matrix, and the one from the previous chunk into the carried state:
//   G   = h_{t0-1} + bn_t0 B_{t0-1} x_{t0-1}^T                        (carried in, global frame)
//   y_t = sum_{s<=t} (Cr_t . Bg_s) exp(cl_t - cl_s) e_ts x_s + exp(cl_t) Cr_t^T G + skip x_t
//   h_end = R(Phi_end) ( exp(cl_end) G + sum_s exp(cl_end - cl_s) e_end,s Bg_s x_s^T )
// with e_ts = gamma_s on the diagonal (s = t) and gamma_s + bn_{s+1} below it.
// Four matrix products per chunk: scores Cr Bg^T (L x L x N, lower triangle only),
// (masked scores) X (L x L x P), (exp(cl) Cr) G (L x N x P) and the state update
// Bw^T X (N x L x P).
//
// Precision. One TF32 product (10-bit mantissa operands) fails the tolerance on
// long-memory and wide-state tests (measured with a NumPy emulation, worst ratio 1.97;
// each of the four products alone in TF32 gives 1.1 to 1.3), so every product is
// split: a = a_hi + a_lo with a_hi = tf32(a), a_lo = tf32(a - a_hi), and
// a*b ~ a_lo*b_hi + a_hi*b_lo + a_hi*b_hi, accumulated in float32 (three mma.sync
// m16n8k8 per product tile). The carried state itself stays float32 outside the
// tensor cores: exp(cl_end) G and the end rotation are plain FP32.
//
// Work split. A block owns 16 columns p of one (b, h) and walks all chunks in order
// (the carried state never leaves shared memory; no inter-block traffic); at the
// official size 2*16*4 = 128 blocks of 4 warps. The scores of a chunk are shared by
// all columns, so a head with P = 64 recomputes them 4 times: the price of keeping
// every block independent. The next chunk's raw inputs are copied into shared memory
// with cp.async while the current chunk is computed (double buffer, d_state <= 64).
//
// Every size is served: d_state is padded to NP (16, 32, 64, 128) rows with zero B
// and C and zero angles; columns past head_dim get x = 0 and are not stored; steps
// past seq_len have dt = 0 (no decay, no write) and are not stored.

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int L = 64;        // chunk length (time steps)
constexpr int PT = 16;       // state columns per block
constexpr int WARPS = 4;
constexpr int THREADS = 32 * WARPS;
constexpr int SX = PT + 8;   // row stride of x and of the state: conflict-free B fragments

template <int NP>
struct Cfg {
    static constexpr int NPP = NP / 2;                    // row pairs
    static constexpr int SB = NP + 4;                     // row stride of B, C: conflict-free A fragments
    static constexpr int NBUF = NP <= 64 ? 2 : 1;         // raw-input buffers (prefetch when two fit)
    // one raw buffer: B rows t0-1 .. t0+L-1, C rows t0 .. t0+L-1, theta, x rows t0-1 .., dt, lam
    static constexpr int OFF_B = 0;
    static constexpr int OFF_C = OFF_B + (L + 1) * SB;
    static constexpr int OFF_TH = OFF_C + L * SB;
    static constexpr int OFF_X = OFF_TH + L * NPP;
    static constexpr int OFF_DT = OFF_X + (L + 1) * SX;
    static constexpr int OFF_LAM = OFF_DT + L;
    static constexpr int RAW = ((OFF_LAM + L + 3) / 4) * 4;
    // working arrays after the raw buffers
    static constexpr int OFF_CS = NBUF * RAW;             // cos, sin of theta: [L][NPP] float2
    static constexpr int OFF_W = OFF_CS + 2 * L * NPP;    // masked scores [L][L + 4]
    static constexpr int SW = L + 4;
    static constexpr int OFF_G = OFF_W + L * SW;          // carried state [NP][SX]
    static constexpr int OFF_GT = OFF_G + NP * SX;        // next state before its rotation
    static constexpr int OFF_VEC = OFF_GT + NP * SX;      // cl, d, gamma, e, wend: [5][L]
    static constexpr int OFF_END = OFF_VEC + 5 * L;       // end rotation per pair: cos, sin
    static constexpr int FLOATS = OFF_END + 2 * NPP;
    static constexpr int TPP = THREADS / NPP;             // threads per pair in the angle scan
    static constexpr int SEG = L / TPP;                   // steps per thread in the angle scan
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Copy `bytes` (4 or 8) from global to shared, or zero-fill when !valid.
__device__ __forceinline__ void copy4(float* dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void copy8(float* dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 8 : 0));
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

__device__ __forceinline__ uint32_t to_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}
// v = hi + lo, both tf32
__device__ __forceinline__ void split(float v, uint32_t& hi, uint32_t& lo) {
    hi = to_tf32(v);
    lo = to_tf32(v - __uint_as_float(hi));
}
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d += a*b in 3xTF32; a given as its four fragment values, b as its two.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
    uint32_t ah[4], al[4], bh[2], bl[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) split(a[i], ah[i], al[i]);
#pragma unroll
    for (int i = 0; i < 2; ++i) split(b[i], bh[i], bl[i]);
    mma_tf32(d, al, bh);  // small terms first
    mma_tf32(d, ah, bl);
    mma_tf32(d, ah, bh);
}

template <int NP>
__global__ void __launch_bounds__(THREADS)
chunked_kernel(const float* __restrict__ x, const float* __restrict__ B, const float* __restrict__ C,
               const float* __restrict__ dt, const float* __restrict__ A, const float* __restrict__ lam,
               const float* __restrict__ theta, const float* __restrict__ skip, float* __restrict__ y,
               int seq_len, int H, int P, int N, int ptiles) {
    using K = Cfg<NP>;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float* cs = sm + K::OFF_CS;
    float* W = sm + K::OFF_W;
    float* G = sm + K::OFF_G;
    float* GT = sm + K::OFF_GT;
    float* v_cl = sm + K::OFF_VEC;
    float* v_d = v_cl + L;
    float* v_ga = v_d + L;
    float* v_e = v_ga + L;
    float* v_wend = v_e + L;
    float* end_c = sm + K::OFF_END;
    float* end_s = end_c + K::NPP;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;  // mma fragment coordinates
    const int pt = blockIdx.x % ptiles, bh = blockIdx.x / ptiles;
    const int h = bh % H, b = bh / H;
    const int p0 = pt * PT;
    const int npairs = N / 2;
    const float A_h = A[h], skip_h = skip[h];
    auto row_of = [&](int t) { return (b * seq_len + t) * H + h; };  // (b, t, h) row, fits in int

    // Issue the copies of chunk c's raw inputs into buffer `raw`; zero where out of range.
    auto load_chunk = [&](int c, float* raw) {
        const int t0 = c * L;
        for (int f = tid; f < (L + 1) * K::NPP; f += THREADS) {  // B rows t0-1 .. t0+L-1
            const int r = f / K::NPP, j = f % K::NPP, t = t0 - 1 + r;
            const bool ok = t >= 0 && t < seq_len && j < npairs;
            copy8(raw + K::OFF_B + r * K::SB + 2 * j, ok ? B + (size_t)row_of(t) * N + 2 * j : B, ok);
        }
        for (int f = tid; f < L * K::NPP; f += THREADS) {  // C and theta rows t0 .. t0+L-1
            const int r = f / K::NPP, j = f % K::NPP, t = t0 + r;
            const bool ok = t < seq_len && j < npairs;
            copy8(raw + K::OFF_C + r * K::SB + 2 * j, ok ? C + (size_t)row_of(t) * N + 2 * j : C, ok);
            copy4(raw + K::OFF_TH + r * K::NPP + j, ok ? theta + (size_t)row_of(t) * npairs + j : theta, ok);
        }
        for (int f = tid; f < (L + 1) * PT; f += THREADS) {  // x rows t0-1 .. t0+L-1
            const int r = f / PT, p = f % PT, t = t0 - 1 + r;
            const bool ok = t >= 0 && t < seq_len && p0 + p < P;
            copy4(raw + K::OFF_X + r * SX + p, ok ? x + (size_t)row_of(t) * P + p0 + p : x, ok);
        }
        for (int f = tid; f < L; f += THREADS) {
            const bool ok = t0 + f < seq_len;
            copy4(raw + K::OFF_DT + f, ok ? dt + row_of(t0 + f) : dt, ok);
            copy4(raw + K::OFF_LAM + f, ok ? lam + row_of(t0 + f) : lam, ok);
        }
        copy_commit();
    };

    for (int f = tid; f < NP * SX; f += THREADS) G[f] = 0.f;  // h_{-1} = 0
    const int nchunks = (seq_len + L - 1) / L;
    load_chunk(0, sm);

    for (int c = 0; c < nchunks; ++c) {
        float* raw = sm + (K::NBUF == 2 ? (c & 1) * K::RAW : 0);
        copy_wait_all();
        __syncthreads();  // raw inputs of chunk c, and the state of chunk c-1, visible to all
        if (K::NBUF == 2 && c + 1 < nchunks) load_chunk(c + 1, sm + ((c + 1) & 1) * K::RAW);

        float* rB = raw + K::OFF_B + K::SB;  // row t0 (row t0-1 is just above)
        float* rC = raw + K::OFF_C;
        float* rX = raw + K::OFF_X + SX;
        const float* rDt = raw + K::OFF_DT;
        const float* rLam = raw + K::OFF_LAM;

        // ---- setup 1: decays (warp 0), cos/sin of every angle (all), trapezoid term into G
        if (warp == 0) {
            const float a0 = rDt[lane] * A_h, a1 = rDt[lane + 32] * A_h;
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
                const float ga = rLam[t] * rDt[t];
                const float bn_next = t + 1 < L ? (1.f - rLam[t + 1]) * rDt[t + 1] : 0.f;
                const float e = ga + bn_next;
                v_cl[t] = cl;
                v_d[t] = expf(cl);
                v_ga[t] = ga;
                v_e[t] = e;
                v_wend[t] = expf(cl_end - cl) * (t == L - 1 ? ga : e);
            }
        }
        for (int f = tid; f < L * K::NPP; f += THREADS) {
            float s, co;
            sincosf(raw[K::OFF_TH + f], &s, &co);
            cs[2 * f] = co;
            cs[2 * f + 1] = s;
        }
        {
            // G += bn_t0 * B_{t0-1} x_{t0-1}^T (zero rows at t0 = 0)
            const float bn0 = (1.f - rLam[0]) * rDt[0];
            const float* bprev = raw + K::OFF_B;
            const float* xprev = raw + K::OFF_X;
            for (int f = tid; f < NP * PT; f += THREADS) {
                const int n = f / PT, p = f % PT;
                G[n * SX + p] += bn0 * bprev[n] * xprev[p];
            }
        }
        __syncthreads();

        // ---- setup 2: running rotation per pair (TPP threads per pair, SEG steps each), then
        // B and C turned in place into Bg = R(-Phi) B, Cr = R(-Phi) C
        {
            const int pair = tid / K::TPP, part = tid % K::TPP, t_begin = part * K::SEG;
            float pc = 1.f, ps = 0.f;  // product of the segment's rotations
#pragma unroll 4
            for (int i = 0; i < K::SEG; ++i) {
                const float co = cs[2 * ((t_begin + i) * K::NPP + pair)], s = cs[2 * ((t_begin + i) * K::NPP + pair) + 1];
                const float nc = pc * co - ps * s, ns = pc * s + ps * co;
                pc = nc;
                ps = ns;
            }
            // exclusive product over the earlier segments of the pair (rotations commute)
            float ec = 1.f, es = 0.f;
            float ic = pc, is = ps;  // inclusive, built by doubling
#pragma unroll
            for (int o = 1; o < K::TPP; o <<= 1) {
                const float uc = __shfl_up_sync(0xffffffffu, ic, o), us = __shfl_up_sync(0xffffffffu, is, o);
                if (part >= o) {
                    const float nc = ic * uc - is * us, ns = ic * us + is * uc;
                    ic = nc;
                    is = ns;
                }
            }
            // exclusive = inclusive of the previous part
            {
                const float uc = __shfl_up_sync(0xffffffffu, ic, 1), us = __shfl_up_sync(0xffffffffu, is, 1);
                if (part > 0) { ec = uc; es = us; }
            }
            pc = ec;
            ps = es;
#pragma unroll 4
            for (int i = 0; i < K::SEG; ++i) {
                const int t = t_begin + i;
                const float co = cs[2 * (t * K::NPP + pair)], s = cs[2 * (t * K::NPP + pair) + 1];
                const float nc = pc * co - ps * s, ns = pc * s + ps * co;
                pc = nc;
                ps = ns;
                float* bt = rB + t * K::SB + 2 * pair;
                float* ct = rC + t * K::SB + 2 * pair;
                const float b0 = bt[0], b1 = bt[1], c0 = ct[0], c1 = ct[1];
                bt[0] = pc * b0 + ps * b1;
                bt[1] = pc * b1 - ps * b0;
                ct[0] = pc * c0 + ps * c1;
                ct[1] = pc * c1 - ps * c0;
            }
            if (part == K::TPP - 1) {
                end_c[pair] = pc;
                end_s[pair] = ps;
            }
        }
        __syncthreads();

        // ---- product 1: scores W = (Cr Bg^T) * exp(cl_i - cl_j) * e, lower triangle, 20 tiles of
        // 16 x 8, five per warp (tile s: row block rb with rb(rb+1) <= s, column tile s - rb(rb+1))
        {
            float acc[5][4];
            int rbs[5], nts[5];
#pragma unroll
            for (int q = 0; q < 5; ++q) {
                const int s = warp + WARPS * q;
                const int rb = s < 2 ? 0 : s < 6 ? 1 : s < 12 ? 2 : 3;
                rbs[q] = rb;
                nts[q] = s - rb * (rb + 1);
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[q][i] = 0.f;
            }
#pragma unroll 2
            for (int k0 = 0; k0 < NP; k0 += 8) {
#pragma unroll
                for (int q = 0; q < 5; ++q) {
                    const float* ar = rC + (rbs[q] * 16 + g) * K::SB + k0 + tg;
                    const float* br = rB + (nts[q] * 8 + g) * K::SB + k0 + tg;
                    const float a[4] = {ar[0], ar[8 * K::SB], ar[4], ar[8 * K::SB + 4]};
                    const float bb[2] = {br[0], br[4]};
                    mma_3xtf32(acc[q], a, bb);
                }
            }
#pragma unroll
            for (int q = 0; q < 5; ++q) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = rbs[q] * 16 + g + (i >= 2 ? 8 : 0);
                    const int j = nts[q] * 8 + 2 * tg + (i & 1);
                    float v = 0.f;
                    if (j <= r) v = acc[q][i] * __expf(v_cl[r] - v_cl[j]) * (j == r ? v_ga[j] : v_e[j]);
                    W[r * K::SW + j] = v;
                }
            }
        }
        __syncthreads();

        // ---- product 2: y = W X + (d Cr) G + skip x, warp w: rows 16w .. 16w+15, both column tiles
        // ---- product 3: GT = d_end G + Bw^T X, tiles (row block, column tile) spread over the warps
        {
            float acc[2][4] = {};
            const int r0 = warp * 16;
            for (int k0 = 0; k0 < r0 + 16; k0 += 8) {  // W is zero right of the diagonal
                const float* ar = W + (r0 + g) * K::SW + k0 + tg;
                const float a[4] = {ar[0], ar[8 * K::SW], ar[4], ar[8 * K::SW + 4]};
#pragma unroll
                for (int nt = 0; nt < 2; ++nt) {
                    const float* br = rX + (k0 + tg) * SX + nt * 8 + g;
                    const float bb[2] = {br[0], br[4 * SX]};
                    mma_3xtf32(acc[nt], a, bb);
                }
            }
            const float d_lo = v_d[r0 + g], d_hi = v_d[r0 + g + 8];
#pragma unroll 2
            for (int k0 = 0; k0 < NP; k0 += 8) {
                const float* ar = rC + (r0 + g) * K::SB + k0 + tg;
                const float a[4] = {ar[0] * d_lo, ar[8 * K::SB] * d_hi, ar[4] * d_lo, ar[8 * K::SB + 4] * d_hi};
#pragma unroll
                for (int nt = 0; nt < 2; ++nt) {
                    const float* br = G + (k0 + tg) * SX + nt * 8 + g;
                    const float bb[2] = {br[0], br[4 * SX]};
                    mma_3xtf32(acc[nt], a, bb);
                }
            }
            const int t0 = c * L;
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = r0 + g + (i >= 2 ? 8 : 0), p = nt * 8 + 2 * tg + (i & 1);
                    if (t0 + r < seq_len && p0 + p < P)
                        y[(size_t)row_of(t0 + r) * P + p0 + p] = acc[nt][i] + skip_h * rX[r * SX + p];
                }
            }
        }
        if (c + 1 < nchunks) {
            const float d_end = v_d[L - 1];
            for (int s = warp; s < (NP / 16) * 2; s += WARPS) {
                const int r0 = (s >> 1) * 16, nt = s & 1;
                float acc[4];
                const int col = nt * 8 + 2 * tg;
                acc[0] = d_end * G[(r0 + g) * SX + col];
                acc[1] = d_end * G[(r0 + g) * SX + col + 1];
                acc[2] = d_end * G[(r0 + g + 8) * SX + col];
                acc[3] = d_end * G[(r0 + g + 8) * SX + col + 1];
#pragma unroll 2
                for (int k0 = 0; k0 < L; k0 += 8) {
                    const float w0 = v_wend[k0 + tg], w1 = v_wend[k0 + tg + 4];
                    const float* ar = rB + (k0 + tg) * K::SB + r0 + g;  // A[m = n][k = t] = Bg[t][n] * wend[t]
                    const float a[4] = {ar[0] * w0, ar[8] * w0, ar[4 * K::SB] * w1, ar[4 * K::SB + 8] * w1};
                    const float* br = rX + (k0 + tg) * SX + nt * 8 + g;
                    const float bb[2] = {br[0], br[4 * SX]};
                    mma_3xtf32(acc, a, bb);
                }
                GT[(r0 + g) * SX + col] = acc[0];
                GT[(r0 + g) * SX + col + 1] = acc[1];
                GT[(r0 + g + 8) * SX + col] = acc[2];
                GT[(r0 + g + 8) * SX + col + 1] = acc[3];
            }
            if (K::NBUF == 1) {
                __syncthreads();  // the only raw buffer is free: fetch the next chunk now
                load_chunk(c + 1, sm);
            }
            __syncthreads();
            // back to the global frame: G = R(Phi_end) GT
            for (int f = tid; f < K::NPP * PT; f += THREADS) {
                const int pair = f / PT, p = f % PT;
                const float co = end_c[pair], s = end_s[pair];
                const float e0 = GT[2 * pair * SX + p], e1 = GT[(2 * pair + 1) * SX + p];
                G[2 * pair * SX + p] = co * e0 - s * e1;
                G[(2 * pair + 1) * SX + p] = s * e0 + co * e1;
            }
        }
    }
}

template <int NP>
void launch(const float* x, const float* B, const float* C, const float* dt, const float* A, const float* lam,
            const float* theta, const float* skip, float* y, int batch, int L_, int H, int P, int N) {
    const size_t smem = sizeof(float) * Cfg<NP>::FLOATS;
    static bool attr_set = false;  // one attribute call per instantiation
    if (!attr_set) {
        cudaFuncSetAttribute(chunked_kernel<NP>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        attr_set = true;
    }
    const int ptiles = (P + PT - 1) / PT;
    chunked_kernel<NP><<<batch * H * ptiles, THREADS, smem>>>(x, B, C, dt, A, lam, theta, skip, y, L_, H, P, N,
                                                              ptiles);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, float* y, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    if (d_state <= 16)
        launch<16>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (d_state <= 32)
        launch<32>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (d_state <= 64)
        launch<64>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else
        launch<128>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
}
