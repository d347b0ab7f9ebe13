// mamba3_scan_backward, chunked (SSD-style) on tensor cores with split-precision (3xTF32) products.
//
// The reverse-mode derivative of the chunked forward (solutions/mamba3_scan/chunked_3xtf32.cu).
// reference/mamba3_scan_backward_chunked.py derives every line below and runs this exact
// algorithm in float64 against the challenge's oracle. In short, per chunk of L = 64 steps
// starting at t0, with angles from the chunk start (Phi_t per row pair, Bg = R(-Phi) B,
// Cr = R(-Phi) C), cl_t = sum_{r<=t} dt_r A, Dec_ts = exp(cl_t - cl_s), dec_t = exp(cl_t),
// decend_t = exp(cl_end - cl_t), gamma_t = lam_t dt_t, bn_t = (1 - lam_t) dt_t and
// e_t = gamma_t + bn_{t+1}:
//   chunk aggregates (kernel 1):  Agg_c = sum_s decend_s e_s Bg_s x_s^T,  BAgg_c = sum_s dec_s Cr_s dy_s^T
//   carries (kernel 2, sequential over chunks, one thread per row pair and column):
//     Gin(c+1) = R(Phi_end)(dec_end Gin(c) + Agg_c)        the state entering chunk c+1
//     Gfut(c)  = R(-Phi_end) dGin(c+1),  dGin(c) = dec_end Gfut(c) + BAgg_c   the adjoint leaving chunk c
//   gradients (kernel 3), with Q_ts = Cr_t.Bg_s and D_ts = dy_t.x_s (lower triangles):
//     dCr = (Dec e D) Bg + dec (dY Gin^T)            (= g_t dy_t; dC = R(Phi) dCr)
//     Gx  = (Dec D)^T Cr + decend (X Gfut^T)         (= Gam_t x_t)
//     Xb  = (Dec Q)^T dY + decend (Bg Gfut)          (= Gam_t^T Bg_t)
//     dB = R(Phi)(e Gx - bn_next xy Cr),  dx = e Xb + (skip - bn_next BC) dy
//   and per-step scalars from row sums (dgamma = Bg.Gx, Cr.dCr), reverse cumulative sums over
//   the chunk for the log-decay (dA, ddt) and the angles (dtheta), and two terms per chunk end
//   from Gin(c+1) and dGin(c+1).
// Eight products per chunk: five in kernel 3 (Q, D, and the three above, each with its
// carried-state term), two in kernel 1; the carried states are plain FP32.
//
// Precision. Every product is 3xTF32 (a = tf32(a) + tf32(a - tf32(a)), three mma.sync m16n8k8
// per tile step, float32 accumulation): plain TF32 breaks the forward's tolerance, and the
// backward's reduced outputs sum more terms. Per-row and per-head sums (Cr.dCr, Bg.Gx, dA, dskip,
// the chunk-end terms) use shared-memory atomics and per-chunk partials, so their order varies;
// the tolerances allow any order.
//
// Sizes. d_state and head_dim are padded to S = 16, 32, 64 or 128 (zero rows and columns);
// steps past seq_len have dt = 0 and zero inputs (no decay, no write) and are not stored. The
// chunk states (two N x P matrices per chunk) live in a cached scratch of at most 256 MB; larger
// problems run the three kernels over groups of (b, h) heads.

#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>

namespace {

constexpr int L = 64;  // chunk length (time steps)
constexpr int WARPS = 8;
constexpr int THREADS = 32 * WARPS;
constexpr int SL = L + 4;  // row stride of the L x L matrices: conflict-free fragments
constexpr size_t SCRATCH_CAP = size_t(256) << 20;

// per-step vectors (index into the OFF_V block)
enum { V_DT, V_LAM, V_DEC, V_DECEND, V_GAM, V_BNN, V_E, V_BC, V_XY, V_CRDCR, V_DGAM, V_COUNT };

template <int NP, int PP>
struct Cfg {
    static constexpr int NPP = NP / 2;  // row pairs
    static constexpr int SN = NP + 4;   // row stride of B, C (Bg, Cr after the setup)
    static constexpr int SP = PP + 4;   // row stride of x, dy
    static constexpr int OFF_X = 0;
    static constexpr int OFF_DY = OFF_X + L * SP;
    static constexpr int OFF_B = OFF_DY + L * SP;
    static constexpr int OFF_C = OFF_B + L * SN;
    static constexpr int OFF_M1 = OFF_C + L * SN;    // Dec Q, later dPhi
    static constexpr int OFF_M2 = OFF_M1 + L * SL;   // Dec D
    static constexpr int OFF_ROT = OFF_M2 + L * SL;  // cos, sin of Phi_t per pair: [L][NPP][2]
    static constexpr int OFF_V = OFF_ROT + 2 * L * NPP;
    static constexpr int NV = V_COUNT;  // per-step vectors of SL floats each
    static constexpr int OFF_XPREV = OFF_V + NV * SL;
    static constexpr int OFF_BPREV = OFF_XPREV + PP;
    static constexpr int OFF_CROSS = OFF_BPREV + NP;
    static constexpr int OFF_MISC = OFF_CROSS + NPP;
    static constexpr int OFF_CL = OFF_MISC + 8;      // cl_t in double: [L]
    static constexpr int FLOATS = OFF_CL + 2 * L;
};
enum { MISC_ABETA0, MISC_DOTEND };

__device__ __forceinline__ uint32_t to_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}
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
// d += a*b in 3xTF32; a as its four fragment values, b as its two.
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

// acc (the 16 x 8 tile at rows m0, columns n0) += sum over k in [k_lo, k_hi) of a_at(m, k) b_at(k, n).
// Fragment coordinates of m16n8k8: a rows g, g+8 and columns tg, tg+4; b rows tg, tg+4, column g.
template <class FA, class FB>
__device__ __forceinline__ void mma_range(float (&acc)[4], int m0, int n0, int k_lo, int k_hi, FA a_at, FB b_at) {
    const int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    for (int k0 = k_lo; k0 < k_hi; k0 += 8) {
        const float a[4] = {a_at(m0 + g, k0 + tg), a_at(m0 + g + 8, k0 + tg), a_at(m0 + g, k0 + tg + 4),
                            a_at(m0 + g + 8, k0 + tg + 4)};
        const float b[2] = {b_at(k0 + tg, n0 + g), b_at(k0 + tg + 4, n0 + g)};
        mma_3xtf32(acc, a, b);
    }
}

struct Problem {
    const float *x, *B, *C, *dt, *A, *lam, *theta, *skip, *dy;
    float *dx, *dB, *dC, *ddt, *dlam, *dtheta;
    int T, H, P, N, nc;
    int bh0;         // first (b, h) head of this group
    float* fw;       // per (head in group, chunk): Agg, then Gin       [N][P]
    float* rw;       // per (head in group, chunk): BAgg, then Gfut     [N][P]
    float* dend;     // per (head in group, chunk): exp(cl_end)
    float* endcs;    // per (head in group, chunk, pair): cos, sin of Phi_end
    float* partial;  // per (b, h, chunk) of the whole problem: dA share, dskip share
};

// The lower-triangle 16 x 8 tiles of an L x L matrix: 20 of them, s -> (row block, column tile).
__device__ __forceinline__ void tri_tile(int s, int& rb, int& ct) {
    rb = s < 2 ? 0 : s < 6 ? 1 : s < 12 ? 2 : 3;
    ct = s - rb * (rb + 1);
}

// Kernel 1 (GRAD = false): chunk aggregates. Kernel 3 (GRAD = true): the gradients of a chunk.
// One block per (chunk, head in group); both begin with the same setup.
template <int NP, int PP, bool GRAD>
__global__ void __launch_bounds__(THREADS) chunk_kernel(Problem pr) {
    using K = Cfg<NP, PP>;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float* sX = sm + K::OFF_X;
    float* sDY = sm + K::OFF_DY;
    float* sB = sm + K::OFF_B;
    float* sC = sm + K::OFF_C;
    float* sM1 = sm + K::OFF_M1;
    float* sM2 = sm + K::OFF_M2;
    float* sRot = sm + K::OFF_ROT;
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
    float* xprev = sm + K::OFF_XPREV;
    float* bprev = sm + K::OFF_BPREV;
    float* crossend = sm + K::OFF_CROSS;
    float* misc = sm + K::OFF_MISC;
    // The prefix sums of dt A reach -4096 in a chunk of fast decay, where a float32 difference
    // cl_t - cl_s of two of them would be off by 1e-3 absolute (1e-3 relative in Dec_ts): kept in double.
    double* v_cl = reinterpret_cast<double*>(sm + K::OFF_CL);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;
    const int c = blockIdx.x, hl = blockIdx.y, bh = pr.bh0 + hl;
    const int T = pr.T, H = pr.H, P = pr.P, N = pr.N, nc = pr.nc, npairs = N / 2;
    const int h = bh % H, b = bh / H, t0 = c * L;
    // products stop at the real sizes (padding rows and columns are zero): k steps of 8, row blocks of 16
    const int Nk = (N + 7) & ~7, Pk = (P + 7) & ~7;
    const float A_h = pr.A[h];
    auto row_of = [&](int t) { return (b * T + t) * H + h; };  // (b, t, h) row, fits in int
    const size_t slot = (size_t)hl * nc + c;                    // this chunk in the group's scratch

    // ---- setup: raw inputs into shared memory (zero where out of range)
    for (int f = tid; f < L * PP; f += THREADS) {
        const int r = f / PP, p = f % PP, t = t0 + r;
        const bool ok = t < T && p < P;
        sX[r * K::SP + p] = ok ? pr.x[(size_t)row_of(t) * P + p] : 0.f;
        sDY[r * K::SP + p] = ok ? pr.dy[(size_t)row_of(t) * P + p] : 0.f;
    }
    for (int f = tid; f < L * NP; f += THREADS) {
        const int r = f / NP, n = f % NP, t = t0 + r;
        const bool ok = t < T && n < N;
        sB[r * K::SN + n] = ok ? pr.B[(size_t)row_of(t) * N + n] : 0.f;
        sC[r * K::SN + n] = ok ? pr.C[(size_t)row_of(t) * N + n] : 0.f;
    }
    for (int f = tid; f < L * K::NPP; f += THREADS) {
        const int r = f / K::NPP, i = f % K::NPP, t = t0 + r;
        float s = 0.f, co = 1.f;
        if (t < T && i < npairs) sincosf(pr.theta[(size_t)row_of(t) * npairs + i], &s, &co);
        sRot[2 * f] = co;
        sRot[2 * f + 1] = s;
    }
    for (int f = tid; f <= L; f += THREADS) {  // one step past the chunk: bn of the next chunk's first step
        const bool ok = t0 + f < T;
        v_dt[f] = ok ? pr.dt[row_of(t0 + f)] : 0.f;
        v_lam[f] = ok ? pr.lam[row_of(t0 + f)] : 0.f;
    }
    if (GRAD) {
        for (int f = tid; f < PP; f += THREADS) xprev[f] = t0 > 0 && f < P ? pr.x[(size_t)row_of(t0 - 1) * P + f] : 0.f;
        for (int f = tid; f < NP; f += THREADS) bprev[f] = t0 > 0 && f < N ? pr.B[(size_t)row_of(t0 - 1) * N + f] : 0.f;
        for (int f = tid; f < K::NPP; f += THREADS) crossend[f] = 0.f;
        for (int f = tid; f < L; f += THREADS) v_crdcr[f] = v_dgam[f] = 0.f;
        if (tid < 8) misc[tid] = 0.f;
    }
    __syncthreads();

    // ---- setup: decays (warp 0), running rotation per pair (warps 1.., one thread per pair)
    if (warp == 0) {
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
        const double cl_end = __shfl_sync(0xffffffffu, s1, 31);
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int t = lane + 32 * k;
            const double cl = k ? s1 : s0;
            const float gam = v_lam[t] * v_dt[t];
            const float bnn = (1.f - v_lam[t + 1]) * v_dt[t + 1];
            v_cl[t] = cl;
            v_dec[t] = expf((float)cl);
            v_decend[t] = expf((float)(cl_end - cl));
            v_gam[t] = gam;
            v_bnn[t] = bnn;
            v_e[t] = gam + bnn;
        }
    } else if (tid - 32 < K::NPP) {
        const int i = tid - 32;
        float pc = 1.f, ps = 0.f;
        for (int r = 0; r < L; ++r) {
            float* cs = sRot + 2 * (r * K::NPP + i);
            const float co = cs[0], s = cs[1];
            const float nc_ = pc * co - ps * s, ns = pc * s + ps * co;
            pc = nc_;
            ps = ns;
            cs[0] = pc;
            cs[1] = ps;
        }
    }
    __syncthreads();
    // B and C turned in place: Bg = R(-Phi) B, Cr = R(-Phi) C
    for (int f = tid; f < L * K::NPP; f += THREADS) {
        const int r = f / K::NPP, i = f % K::NPP;
        const float pc = sRot[2 * f], ps = sRot[2 * f + 1];
        float* bt = sB + r * K::SN + 2 * i;
        float* ct = sC + r * K::SN + 2 * i;
        const float b0 = bt[0], b1 = bt[1], c0 = ct[0], c1 = ct[1];
        bt[0] = pc * b0 + ps * b1;
        bt[1] = pc * b1 - ps * b0;
        ct[0] = pc * c0 + ps * c1;
        ct[1] = pc * c1 - ps * c0;
    }
    __syncthreads();

    const size_t mat = (size_t)N * P;
    if (!GRAD) {
        // ---- chunk aggregates (rotated frame of the chunk start = global frame for BAgg)
        float* agg = pr.fw + slot * mat;
        float* bagg = pr.rw + slot * mat;
        constexpr int TILES = (NP / 16) * (PP / 8);
        for (int j = warp; j < 2 * TILES; j += WARPS) {
            const bool second = j >= TILES;
            const int jj = second ? j - TILES : j, m0 = (jj / (PP / 8)) * 16, n0 = (jj % (PP / 8)) * 8;
            if (m0 >= N || n0 >= P) continue;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            if (!second)
                mma_range(acc, m0, n0, 0, L, [&](int n, int r) { return sB[r * K::SN + n] * (v_decend[r] * v_e[r]); },
                          [&](int r, int p) { return sX[r * K::SP + p]; });
            else
                mma_range(acc, m0, n0, 0, L, [&](int n, int r) { return sC[r * K::SN + n] * v_dec[r]; },
                          [&](int r, int p) { return sDY[r * K::SP + p]; });
            float* dst = second ? bagg : agg;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int n = m0 + g + (i >= 2 ? 8 : 0), p = n0 + 2 * tg + (i & 1);
                if (n < N && p < P) dst[(size_t)n * P + p] = acc[i];
            }
        }
        if (tid == 0) pr.dend[slot] = v_dec[L - 1];
        for (int i = tid; i < npairs; i += THREADS) {
            pr.endcs[2 * (slot * npairs + i)] = sRot[2 * ((L - 1) * K::NPP + i)];
            pr.endcs[2 * (slot * npairs + i) + 1] = sRot[2 * ((L - 1) * K::NPP + i) + 1];
        }
        return;
    }

    const float* Gin = pr.fw + slot * mat;   // state entering the chunk (global frame)
    const float* Gfut = pr.rw + slot * mat;  // adjoint arriving from the next chunk, chunk frame
    const bool has_next = c + 1 < nc;

    // ---- Q = Cr Bg^T and D = dY X^T, lower triangles, stored times Dec_ts
    for (int j = warp; j < 40; j += WARPS) {
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
            dst[t * SL + s] = s <= t ? acc[i] * expf((float)(v_cl[t] - v_cl[s])) : 0.f;
        }
    }
    // chunk-end terms: cross_i and dot of Gin(c+1) and dGin(c+1) = R(Phi_end) Gfut, and the
    // part B_{t0-1} . dec_end Gfut x_{t0-1} of alpha_t0 dbeta_t0
    {
        const float* Gnext = pr.fw + (slot + 1) * mat;
        float dot = 0.f, ab = 0.f;
        for (int f = tid; f < npairs * P; f += THREADS) {
            const int i = f / P, p = f % P;
            const float f0 = Gfut[(size_t)(2 * i) * P + p], f1 = Gfut[(size_t)(2 * i + 1) * P + p];
            ab += (bprev[2 * i] * f0 + bprev[2 * i + 1] * f1) * xprev[p];
            if (has_next) {
                const float co = sRot[2 * ((L - 1) * K::NPP + i)], s = sRot[2 * ((L - 1) * K::NPP + i) + 1];
                const float d0 = co * f0 - s * f1, d1 = s * f0 + co * f1;  // dGin(c+1), global frame
                const float n0 = Gnext[(size_t)(2 * i) * P + p], n1 = Gnext[(size_t)(2 * i + 1) * P + p];
                dot += n0 * d0 + n1 * d1;
                atomicAdd(&crossend[i], n0 * d1 - n1 * d0);
            }
        }
        atomicAdd(&misc[MISC_DOTEND], dot);
        atomicAdd(&misc[MISC_ABETA0], ab * v_dec[L - 1]);
        // the other part: sum_s dec_s (dy_s . x_{t0-1}) (B_{t0-1} . Cr_s)
        for (int s = tid; s < L; s += THREADS) {
            float xd = 0.f, bc = 0.f;
            for (int p = 0; p < P; ++p) xd += sDY[s * K::SP + p] * xprev[p];
            for (int n = 0; n < N; ++n) bc += bprev[n] * sC[s * K::SN + n];
            atomicAdd(&misc[MISC_ABETA0], v_dec[s] * xd * bc);
        }
    }
    __syncthreads();

    // ---- dx = e Xb + (skip - bn_next BC) dy,  Xb = (Dec Q)^T dY + decend (Bg Gfut)
    {
        const float skip_h = pr.skip[h];
        constexpr int CT = PP / 8;
        for (int j = warp; j < 4 * CT; j += WARPS) {
            const int rb = j / CT, n0 = (j % CT) * 8, m0 = rb * 16;
            if (n0 >= P) continue;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            mma_range(acc, m0, n0, m0, L, [&](int t, int s) { return sM1[s * SL + t]; },
                      [&](int s, int p) { return sDY[s * K::SP + p]; });
            mma_range(acc, m0, n0, 0, Nk, [&](int t, int n) { return sB[t * K::SN + n] * v_decend[t]; },
                      [&](int n, int p) { return n < N && p < P ? Gfut[(size_t)n * P + p] : 0.f; });
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int t = m0 + g + (i >= 2 ? 8 : 0), p = n0 + 2 * tg + (i & 1);
                if (t0 + t < T && p < P) {
                    const float d = sDY[t * K::SP + p];
                    pr.dx[(size_t)row_of(t0 + t) * P + p] = v_e[t] * acc[i] + (skip_h - v_bnn[t] * v_bc[t]) * d;
                }
            }
        }
    }
    __syncthreads();  // sM1 (Dec Q) is free: it takes dPhi below

    // ---- dCr = (Dec e D) Bg + dec (dY Gin^T) and Gx = (Dec D)^T Cr + decend (X Gfut^T), the same
    // tile of both in one warp, so that the epilogue has every per-(t, pair) quantity at hand
    {
        constexpr int CT = NP / 8;
        for (int j = warp; j < 4 * CT; j += WARPS) {
            const int rb = j / CT, n0 = (j % CT) * 8, m0 = rb * 16;
            if (n0 >= N) continue;  // whole warp: the shuffles below stay converged
            float dcr[4] = {0.f, 0.f, 0.f, 0.f}, gx[4] = {0.f, 0.f, 0.f, 0.f};
            mma_range(dcr, m0, n0, 0, m0 + 16,
                      [&](int t, int s) { return sM2[t * SL + s] * (s == t ? v_gam[s] : v_e[s]); },
                      [&](int s, int n) { return sB[s * K::SN + n]; });
            mma_range(dcr, m0, n0, 0, Pk, [&](int t, int p) { return sDY[t * K::SP + p] * v_dec[t]; },
                      [&](int p, int n) { return p < P && n < N ? Gin[(size_t)n * P + p] : 0.f; });
            mma_range(gx, m0, n0, m0, L, [&](int t, int s) { return sM2[s * SL + t]; },
                      [&](int s, int n) { return sC[s * K::SN + n]; });
            mma_range(gx, m0, n0, 0, Pk, [&](int t, int p) { return sX[t * K::SP + p] * v_decend[t]; },
                      [&](int p, int n) { return p < P && n < N ? Gfut[(size_t)n * P + p] : 0.f; });
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int t = m0 + g + 8 * half, n = n0 + 2 * tg, i = n / 2;
                const float dcr0 = dcr[2 * half], dcr1 = dcr[2 * half + 1];
                const float gx0 = gx[2 * half], gx1 = gx[2 * half + 1];
                const float cr0 = sC[t * K::SN + n], cr1 = sC[t * K::SN + n + 1];
                const float bg0 = sB[t * K::SN + n], bg1 = sB[t * K::SN + n + 1];
                float crd = cr0 * dcr0 + cr1 * dcr1, dg = bg0 * gx0 + bg1 * gx1;
                crd += __shfl_xor_sync(0xffffffffu, crd, 1);
                dg += __shfl_xor_sync(0xffffffffu, dg, 1);
                crd += __shfl_xor_sync(0xffffffffu, crd, 2);
                dg += __shfl_xor_sync(0xffffffffu, dg, 2);
                if (tg == 0) {
                    atomicAdd(&v_crdcr[t], crd);
                    atomicAdd(&v_dgam[t], dg);
                }
                const float dbg0 = v_e[t] * gx0 - v_bnn[t] * v_xy[t] * cr0;
                const float dbg1 = v_e[t] * gx1 - v_bnn[t] * v_xy[t] * cr1;
                sM1[t * SL + i] = (dcr0 * cr1 - dcr1 * cr0) + (dbg0 * bg1 - dbg1 * bg0);
                if (t0 + t < T && n < N) {
                    const float pc = sRot[2 * (t * K::NPP + i)], ps = sRot[2 * (t * K::NPP + i) + 1];
                    const size_t o = (size_t)row_of(t0 + t) * N + n;
                    pr.dB[o] = pc * dbg0 - ps * dbg1;
                    pr.dB[o + 1] = ps * dbg0 + pc * dbg1;
                    pr.dC[o] = pc * dcr0 - ps * dcr1;
                    pr.dC[o + 1] = ps * dcr0 + pc * dcr1;
                }
            }
        }
    }
    __syncthreads();

    // ---- per-step scalars (warp 0) and angle gradients (one thread per pair, warps 1..)
    if (warp == 0) {
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
    } else if (tid - 32 < npairs) {
        const int i = tid - 32;
        float s = crossend[i];  // the chunk end's rotation belongs to the last step
        for (int t = L - 1; t >= 0; --t) {
            s += sM1[t * SL + i];
            if (t0 + t < T) pr.dtheta[(size_t)row_of(t0 + t) * npairs + i] = s;
        }
    }
}

// Kernel 2: the carries, one thread per (head in group, row pair, column) and direction.
__global__ void carry_kernel(Problem pr, int nheads) {
    const int P = pr.P, N = pr.N, npairs = N / 2, nc = pr.nc;
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)nheads * npairs * P) return;
    const int p = (int)(idx % P), i = (int)((idx / P) % npairs), hl = (int)(idx / ((long long)P * npairs));
    const size_t mat = (size_t)N * P;
    auto at = [&](int c) { return ((size_t)hl * nc + c) * mat + (size_t)(2 * i) * P + p; };
    auto cs = [&](int c) { return 2 * (((size_t)hl * nc + c) * npairs + i); };
    if (blockIdx.y == 0) {
        // Gin(c+1) = R(Phi_end)(dec_end Gin(c) + Agg_c); slot c: Agg_c in, Gin(c) out
        float g0 = 0.f, g1 = 0.f;
        float a0 = pr.fw[at(0)], a1 = pr.fw[at(0) + P];
        for (int c = 0; c < nc; ++c) {
            float na0 = 0.f, na1 = 0.f;
            if (c + 1 < nc) {  // fetch ahead: the loads do not wait on the carry
                na0 = pr.fw[at(c + 1)];
                na1 = pr.fw[at(c + 1) + P];
            }
            pr.fw[at(c)] = g0;
            pr.fw[at(c) + P] = g1;
            const float d = pr.dend[(size_t)hl * nc + c], co = pr.endcs[cs(c)], s = pr.endcs[cs(c) + 1];
            const float u0 = d * g0 + a0, u1 = d * g1 + a1;
            g0 = co * u0 - s * u1;
            g1 = s * u0 + co * u1;
            a0 = na0;
            a1 = na1;
        }
    } else {
        // Gfut(c) = R(-Phi_end) dGin(c+1), dGin(c) = dec_end Gfut(c) + BAgg_c; slot c: BAgg_c in, Gfut(c) out
        float q0 = 0.f, q1 = 0.f;
        float b0 = pr.rw[at(nc - 1)], b1 = pr.rw[at(nc - 1) + P];
        for (int c = nc - 1; c >= 0; --c) {
            float nb0 = 0.f, nb1 = 0.f;
            if (c > 0) {
                nb0 = pr.rw[at(c - 1)];
                nb1 = pr.rw[at(c - 1) + P];
            }
            const float d = pr.dend[(size_t)hl * nc + c], co = pr.endcs[cs(c)], s = pr.endcs[cs(c) + 1];
            const float f0 = co * q0 + s * q1, f1 = co * q1 - s * q0;
            pr.rw[at(c)] = f0;
            pr.rw[at(c) + P] = f1;
            q0 = d * f0 + b0;
            q1 = d * f1 + b1;
            b0 = nb0;
            b1 = nb1;
        }
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

// Scratch that persists across calls, grown when a larger problem needs more.
float* scratch(size_t bytes) {
    static float* ptr = nullptr;
    static size_t have = 0;
    if (bytes > have) {
        if (ptr) cudaFree(ptr);
        ptr = nullptr;
        have = 0;
        if (cudaMalloc(&ptr, bytes) != cudaSuccess) return nullptr;
        have = bytes;
    }
    return ptr;
}

template <int S>
void run(Problem pr, int batch, float* dA, float* dskip) {
    const int nbh = batch * pr.H, nc = pr.nc, npairs = pr.N / 2;
    const size_t smem = sizeof(float) * Cfg<S, S>::FLOATS;
    static bool attr_set = false;  // one attribute call per instantiation
    if (!attr_set) {
        cudaFuncSetAttribute(chunk_kernel<S, S, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        cudaFuncSetAttribute(chunk_kernel<S, S, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        attr_set = true;
    }
    // per head: two N x P matrices, one decay and Phi_end per chunk; per (b, h, chunk): two partials
    const size_t per_head = (size_t)nc * (2 * (size_t)pr.N * pr.P + 1 + 2 * npairs);
    const int group = (int)std::max<size_t>(1, std::min<size_t>(nbh, SCRATCH_CAP / (sizeof(float) * per_head)));
    const size_t partial_floats = 2 * (size_t)nbh * nc;
    float* base = scratch(sizeof(float) * (partial_floats + group * per_head));
    if (!base) return;
    pr.partial = base;
    float* s = base + partial_floats;
    const size_t mat_all = (size_t)group * nc * pr.N * pr.P;
    pr.fw = s;
    pr.rw = s + mat_all;
    pr.dend = s + 2 * mat_all;
    pr.endcs = pr.dend + (size_t)group * nc;
    for (int bh0 = 0; bh0 < nbh; bh0 += group) {
        const int n = std::min(group, nbh - bh0);
        pr.bh0 = bh0;
        const dim3 grid(nc, n);
        chunk_kernel<S, S, false><<<grid, THREADS, smem>>>(pr);
        const long long threads = (long long)n * npairs * pr.P;
        carry_kernel<<<dim3((unsigned)((threads + 255) / 256), 2), 256>>>(pr, n);
        chunk_kernel<S, S, true><<<grid, THREADS, smem>>>(pr);
    }
    head_sums_kernel<<<pr.H, 32>>>(pr.partial, dA, dskip, batch, pr.H, nc);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, const float* dy, float* dx, float* dB,
                      float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    Problem pr{x, B, C, dt, A, lam, theta, skip, dy, dx, dB, dC, ddt, dlam, dtheta,
               seq_len, n_heads, head_dim, d_state, (seq_len + L - 1) / L, 0, nullptr, nullptr, nullptr, nullptr, nullptr};
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
