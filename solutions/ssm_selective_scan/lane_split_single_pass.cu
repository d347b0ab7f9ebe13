// ssm_selective_scan: single-pass scan, d_state spread across lanes (the reference
// until the chunked scan in reference/ssm_selective_scan.cu overtook it).
//
// Algorithm. One pass over time, no chunking, so every exp(delta*A) is computed
// exactly once (134M at the official size) and u, delta are read once. 2048
// channels x 16 states are too few recurrences to fill 132 SMs with one channel
// per thread, so each channel's states are split over NL lanes (S states per
// lane, NL*S >= d_state): 8 lanes x 2 states for d_state = 16, one warp per SM
// sub-partition. A block owns DT consecutive channels of one batch row and walks
// time in tiles of TT steps:
//   * staging: delta, u, B, C for tile k+1 are loaded (16-byte, coalesced
//     along d or n) into registers while tile k computes, then written to a
//     second shared buffer transposed to [channel or state][t], so the scan
//     reads 4 consecutive steps with one 16-byte shared load. delta*u and
//     skip*u are formed once per (t, d) here, not once per state.
//   * scan: per step and state, a = ex2.approx(delta * A*log2(e)) (log2(e)
//     folded into A: one FMUL + one MUFU op), h = a*h + (delta*u)*B, and the
//     lane's partial C.h goes to shared memory. Shared loads run two groups of
//     4 steps ahead and exponentials one group ahead of the h chain (software
//     pipeline), so MUFU work overlaps the dependent FMAs.
//   * re-anchor: once per tile the carried state's decay is reset to the exact
//     2^(A*log2(e)*sum delta); without it the hardware ex2's small error near 1
//     drifts over thousands of steps past tolerance (see the comment in the scan).
//   * reduce: after one barrier per tile the block sums the NL partials plus
//     skip*u for each (t, d) and writes y in coalesced rows.
// The partials buffer is triple-buffered and the input buffers double-buffered
// so one __syncthreads per tile orders everything (see the hazard note below).
//
// Why it is faster than chunked_three_pass (H200, (4, 4096, 512, 16): 166 us vs
// 386 us): half the exponentials and half the u/delta traffic. What bounds it is shared
// memory: with 2 states per lane every (t, n) needs ~3 lane-words of delta,
// delta*u, B, C delivered from shared memory (32 lane-words/clk/SM), ~48 us
// for the operands alone, plus the partials' round trip. Reaching the ~32 us
// MUFU floor needs more states and channels per lane (fewer words per (t, n))
// without losing the parallelism, e.g. by splitting time as well.
//
// Every size is served by the same template: d_state is padded to NL*S with
// zero B/C (those states stay 0), ragged d_model and seq_len tiles load zeros
// (delta = 0 gives a = 1, h unchanged) and are not stored, and rows that are
// not 16-byte aligned take a scalar load path.

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

// exp2f rather than inline ex2.approx PTX: the same MUFU.EX2 plus a little
// range handling, and plain CUDA C, so the CPU emulator (and CI) can run it.
__device__ __forceinline__ float ex2_approx(float x) { return exp2f(x); }

// 2^r = 1 + r*q(r) on |r| <= 1/2: q is a degree-4 near-minimax fit (max relative
// error of 2^r 1.7e-7 in float32, exact at r = 0).
__device__ __forceinline__ float poly_q(float r) {
    float q = fmaf(0.001326472731307149f, r, 0.009671512991189957f);
    q = fmaf(q, r, 0.05550733581185341f);
    q = fmaf(q, r, 0.24022242426872253f);
    return fmaf(q, r, 0.6931470036506653f);
}

// 2^x for x <= 0 on the FMA pipe (x = j + r, 2^j added to the exponent field).
// Used for a fraction of the exponentials to unload the MUFU pipe, if enabled.
__device__ __forceinline__ float ex2_poly(float x) {
    x = fmaxf(x, -125.f);  // keeps the result normal; 2^-125 vs 0 is far below tolerance
    const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds x to an integer
    const float t = x + magic;
    const float r = x - (t - magic);
    const float p = fmaf(poly_q(r), r, 1.f);
    // low bits of t's pattern hold j; shifting by 23 drops the magic's own bits
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// 1 - 2^x for x <= 0, accurate in absolute terms near x = 0 (no cancellation).
__device__ __forceinline__ float one_minus_ex2(float x) {
    return x > -0.5f ? -x * poly_q(x) : 1.f - ex2_poly(x);
}

#ifndef POLY_PER_GROUP
#define POLY_PER_GROUP 0  // exponentials per (4 steps x S states) taken by ex2_poly
#endif

__device__ __forceinline__ float comp(const float4& v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

template <int NL, int S, int TT>
struct Cfg {
    static constexpr int CPW = 32 / NL;         // channels per warp
    static constexpr int DT = CPW * kWarps;     // channels per block
    static constexpr int NS = NL * S;           // padded state count
    static constexpr int P = TT + 4;            // row pitch (floats): 16B rows land in distinct bank quads
    static constexpr int RP = (NL + 1) * P;     // partials per channel: NL lane rows + skip*u row
    static constexpr int IN_FLOATS = 2 * DT * P + 2 * NS * P;  // delta, delta*u, B, C
    static constexpr int RED_FLOATS = DT * RP;
    static constexpr int SMEM_FLOATS = 2 * IN_FLOATS + 3 * RED_FLOATS;
    static constexpr int DU_ITEMS = (DT * TT / 4 + kThreads - 1) / kThreads;  // float4 items / thread
    static constexpr int BC_ITEMS = (NS * TT / 4 + kThreads - 1) / kThreads;
    static constexpr int OUT_ITEMS = (DT * TT / 4 + kThreads - 1) / kThreads;
    static_assert(RP % 32 == 4 || RP % 32 == 12 || RP % 32 == 20 || RP % 32 == 28,
                  "channel pitch must spread 8 channels over 8 bank quads");
    static_assert(kThreads % (DT / 4) == 0, "each thread must stage one fixed group of 4 channels");
};

template <int NL, int S, int TT, bool VEC>
__global__ void __launch_bounds__(kThreads)
scan_kernel(const float* __restrict__ u, const float* __restrict__ delta,
            const float* __restrict__ A, const float* __restrict__ Bm,
            const float* __restrict__ Cm, const float* __restrict__ skip,
            float* __restrict__ y, int L, int D, int N, int ntiles_d) {
    using K = Cfg<NL, S, TT>;
    constexpr int DT = K::DT, NS = K::NS, P = K::P, RP = K::RP;
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    float* red_base = smem + 2 * K::IN_FLOATS;
    // two input buffers of IN_FLOATS each, then three partial buffers; input layout: sd[DT][P] | sdu[DT][P] | sB[NS][P] | sC[NS][P]

    const int tid = threadIdx.x;
    const int b = blockIdx.x / ntiles_d;
    const int d0 = (blockIdx.x % ntiles_d) * DT;
    // VEC (d_model and d_state multiples of 4): 16-byte global loads, no per-element guards
    const size_t row0 = static_cast<size_t>(b) * L;

    // ---- staging: each thread holds float4 items of (t, 4 channels) and (t, 4 states)
    const int sc0 = 4 * (tid % (DT / 4));  // fixed channel group of this thread
    float skip4[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) skip4[i] = (d0 + sc0 + i < D) ? skip[d0 + sc0 + i] : 0.f;

    float4 pd[K::DU_ITEMS], pu[K::DU_ITEMS], pb[K::BC_ITEMS], pc[K::BC_ITEMS];

    auto load_tile = [&](int t0) {
#pragma unroll
        for (int i = 0; i < K::DU_ITEMS; ++i) {
            const int f = tid + kThreads * i;
            const int t = t0 + f / (DT / 4);
            const int d = d0 + sc0;
            float4 vd = make_float4(0.f, 0.f, 0.f, 0.f), vu = vd;
            if (f < DT * TT / 4 && t < L && d < D) {
                const size_t off = (row0 + t) * D + d;
                if (VEC) {
                    vd = __ldcs(reinterpret_cast<const float4*>(delta + off));
                    vu = __ldcs(reinterpret_cast<const float4*>(u + off));
                } else {
                    vd.x = __ldcs(delta + off);
                    vu.x = __ldcs(u + off);
                    if (d + 1 < D) { vd.y = __ldcs(delta + off + 1); vu.y = __ldcs(u + off + 1); }
                    if (d + 2 < D) { vd.z = __ldcs(delta + off + 2); vu.z = __ldcs(u + off + 2); }
                    if (d + 3 < D) { vd.w = __ldcs(delta + off + 3); vu.w = __ldcs(u + off + 3); }
                }
            }
            pd[i] = vd;
            pu[i] = vu;
        }
#pragma unroll
        for (int i = 0; i < K::BC_ITEMS; ++i) {
            const int f = tid + kThreads * i;
            const int t = t0 + f / (NS / 4);
            const int n = 4 * (f % (NS / 4));
            float4 vb = make_float4(0.f, 0.f, 0.f, 0.f), vc = vb;
            if (f < NS * TT / 4 && t < L && n < N) {
                const size_t off = (row0 + t) * N + n;
                if (VEC) {
                    vb = __ldg(reinterpret_cast<const float4*>(Bm + off));
                    vc = __ldg(reinterpret_cast<const float4*>(Cm + off));
                } else {
                    vb.x = __ldg(Bm + off);
                    vc.x = __ldg(Cm + off);
                    if (n + 1 < N) { vb.y = __ldg(Bm + off + 1); vc.y = __ldg(Cm + off + 1); }
                    if (n + 2 < N) { vb.z = __ldg(Bm + off + 2); vc.z = __ldg(Cm + off + 2); }
                    if (n + 3 < N) { vb.w = __ldg(Bm + off + 3); vc.w = __ldg(Cm + off + 3); }
                }
            }
            pb[i] = vb;
            pc[i] = vc;
        }
    };

    // Write the prefetched tile transposed: inputs to in_buf, skip*u to row NL of red.
    auto store_tile = [&](float* ib, float* rb) {
        float* sd = ib;
        float* sdu = ib + DT * P;
        float* sB = ib + 2 * DT * P;
        float* sC = sB + NS * P;
#pragma unroll
        for (int i = 0; i < K::DU_ITEMS; ++i) {
            const int f = tid + kThreads * i;
            if (f < DT * TT / 4) {
                const int t = f / (DT / 4);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float dv = comp(pd[i], j), uv = comp(pu[i], j);
                    sd[(sc0 + j) * P + t] = dv;
                    sdu[(sc0 + j) * P + t] = dv * uv;
                    rb[(sc0 + j) * RP + NL * P + t] = skip4[j] * uv;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < K::BC_ITEMS; ++i) {
            const int f = tid + kThreads * i;
            if (f < NS * TT / 4) {
                const int t = f / (NS / 4);
                const int n = 4 * (f % (NS / 4));
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    sB[(n + j) * P + t] = comp(pb[i], j);
                    sC[(n + j) * P + t] = comp(pc[i], j);
                }
            }
        }
    };

    // ---- scan role: lane owns channel c, states n = ln + NL*s
    const int warp = tid / 32, lane = tid % 32;
    const int c = warp * K::CPW + lane / NL;
    const int ln = lane % NL;
    float A2[S], h[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
        const int n = ln + NL * s;
        A2[s] = (d0 + c < D && n < N) ? A[static_cast<size_t>(d0 + c) * N + n] * kLog2e : 0.f;
        h[s] = 0.f;
    }

    const int ntiles_t = (L + TT - 1) / TT;
    load_tile(0);
    store_tile(smem, red_base);
    __syncthreads();

    // Hazards with one barrier per tile k: in_buf[(k+1)&1] is written after the
    // scan of tile k and was last read by the scan of tile k-1 (before barrier
    // k-1). red[k%3] rows < NL are written by the scan of tile k, its skip*u
    // row by the staging in tile k-1; it is read by the reduce of tile k (after
    // barrier k) and next written by the staging in tile k+2 (after barrier k+1).
    for (int kt = 0; kt < ntiles_t; ++kt) {
        const int t0 = kt * TT;
        if (kt + 1 < ntiles_t) load_tile(t0 + TT);

        const float* ib = smem + (kt & 1) * K::IN_FLOATS;
        float* rb = red_base + (kt % 3) * K::RED_FLOATS;
        {
            const float* sd = ib + c * P;
            const float* sdu = ib + DT * P + c * P;
            const float* sB = ib + 2 * DT * P + ln * P;
            const float* sC = sB + NS * P;
            float* rw = rb + c * RP + ln * P;
            // Software pipeline over groups of 4 steps: shared loads run two
            // groups ahead and exponentials one group ahead of the h chain, so
            // MUFU work overlaps the dependent FMAs even with one warp per SMSP.
            // Partials go out after the next loads in program order, so the
            // stores never block them (the compiler cannot prove no aliasing).
            float4 ld_d[2], ld_u[2], ld_B[2][S], ld_C[2][S];
            auto lds = [&](int g, int slot) {
                ld_d[slot] = *reinterpret_cast<const float4*>(sd + 4 * g);
                ld_u[slot] = *reinterpret_cast<const float4*>(sdu + 4 * g);
#pragma unroll
                for (int s = 0; s < S; ++s) {
                    ld_B[slot][s] = *reinterpret_cast<const float4*>(sB + s * NL * P + 4 * g);
                    ld_C[slot][s] = *reinterpret_cast<const float4*>(sC + s * NL * P + 4 * g);
                }
            };
            float a_cur[4][S], a_nxt[4][S];
            float dsum = 0.f;  // this channel's sum of delta over the tile
            auto exps = [&](int slot, float (&a)[4][S]) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float dj = comp(ld_d[slot], j);
#pragma unroll
                    for (int s = 0; s < S; ++s)
                        a[j][s] = (j * S + s < POLY_PER_GROUP) ? ex2_poly(dj * A2[s])
                                                               : ex2_approx(dj * A2[s]);
                }
                dsum += (ld_d[slot].x + ld_d[slot].y) + (ld_d[slot].z + ld_d[slot].w);
            };
            // h0: state at tile start; m = 1 - (product of the a's used this tile),
            // kept as 1 - P so that decays near 1 lose no bits to rounding
            float h0[S], m[S];
#pragma unroll
            for (int s = 0; s < S; ++s) { h0[s] = h[s]; m[s] = 0.f; }

            lds(0, 0);
            exps(0, a_cur);
            if (TT / 4 > 1) lds(1, 1);
#pragma unroll
            for (int g = 0; g < TT / 4; ++g) {
                const int cs = g & 1;  // slot holding group g (du, B, C still needed)
                const float4 du = ld_u[cs];
                float4 Bv[S], Cv[S];
#pragma unroll
                for (int s = 0; s < S; ++s) { Bv[s] = ld_B[cs][s]; Cv[s] = ld_C[cs][s]; }
                if (g + 1 < TT / 4) exps(cs ^ 1, a_nxt);
                if (g + 2 < TT / 4) lds(g + 2, cs);
                float p[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float duj = comp(du, j);
#pragma unroll
                    for (int s = 0; s < S; ++s) {
                        const float a = a_cur[j][s];
                        const float e = 1.f - a;  // exact for a in [1/2, 1]
                        m[s] = fmaf(-m[s], e, m[s] + e);  // 1 - P*a = m + e - m*e
                        h[s] = fmaf(a, h[s], duj * comp(Bv[s], j));
                        p[j] = (s == 0) ? comp(Cv[s], j) * h[s] : fmaf(comp(Cv[s], j), h[s], p[j]);
                    }
                }
                *reinterpret_cast<float4*>(rw + 4 * g) = make_float4(p[0], p[1], p[2], p[3]);
#pragma unroll
                for (int j = 0; j < 4; ++j)
#pragma unroll
                    for (int s = 0; s < S; ++s) a_cur[j][s] = a_nxt[j][s];
            }
            // MUFU ex2 is slightly off for arguments near 0 (decays near 1), and
            // over thousands of steps the product of the per-step a's drifts
            // (seen: 2.3e-3 error at seq_len 8192, d_state 64, long memory, over
            // tolerance). Re-anchor once per tile: the carried part of h was
            // multiplied by 1 - m, it should have been 2^(A2 * sum delta); both
            // are handled as 1 - P, exact to ~1e-10 (a running product P itself
            // would add ~3e-7 rounding noise per tile, worse than the bias).
#pragma unroll
            for (int s = 0; s < S; ++s)
                h[s] = fmaf(m[s] - one_minus_ex2(dsum * A2[s]), h0[s], h[s]);
        }

        if (kt + 1 < ntiles_t)
            store_tile(smem + ((kt + 1) & 1) * K::IN_FLOATS, red_base + ((kt + 1) % 3) * K::RED_FLOATS);
        __syncthreads();

        // reduce: item o -> channel o % DT, steps 4*(o / DT) .. +3
#pragma unroll
        for (int i = 0; i < K::OUT_ITEMS; ++i) {
            const int o = tid + kThreads * i;
            if (o < DT * TT / 4) {
                const int cc = o % DT, tq = o / DT;
                const float* rr = rb + cc * RP + 4 * tq;
                float4 acc = *reinterpret_cast<const float4*>(rr + NL * P);  // skip*u
#pragma unroll
                for (int r = 0; r < NL; ++r) {
                    const float4 v = *reinterpret_cast<const float4*>(rr + r * P);
                    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
                }
                const int d = d0 + cc;
                if (d < D) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const int t = t0 + 4 * tq + j;
                        if (t < L) __stcs(y + (row0 + t) * D + d, comp(acc, j));
                    }
                }
            }
        }
    }
}

template <int NL, int S, int TT, bool VEC>
void launch_v(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    using K = Cfg<NL, S, TT>;
    const size_t smem = sizeof(float) * K::SMEM_FLOATS;
    static bool attr_set = false;  // one attribute call per instantiation
    if (!attr_set) {
        cudaFuncSetAttribute(scan_kernel<NL, S, TT, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
        attr_set = true;
    }
    const int ntiles_d = (D + K::DT - 1) / K::DT;
    scan_kernel<NL, S, TT, VEC><<<batch * ntiles_d, kThreads, smem>>>(u, delta, A, B, C, skip, y, L, D, N,
                                                                 ntiles_d);
}

template <int NL, int S, int TT>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    const auto addr = reinterpret_cast<uintptr_t>(u) | reinterpret_cast<uintptr_t>(delta) |
                      reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C);
    if (D % 4 == 0 && N % 4 == 0 && addr % 16 == 0)
        launch_v<NL, S, TT, true>(u, delta, A, B, C, skip, y, batch, L, D, N);
    else
        launch_v<NL, S, TT, false>(u, delta, A, B, C, skip, y, batch, L, D, N);
}

}  // namespace

// d_state <= 16 configuration, measured at the official size on an H200 (median
// of 100 calls, L2 flushed): NL=8 TT=32 153.6 us, NL=16 TT=32 155.4 us, NL=8
// TT=64 178.5 us; POLY_PER_GROUP=2 did not help (179.3 us at TT=64), since
// shared memory, not MUFU, is the limit.
#ifndef FAST16_NL
#define FAST16_NL 8
#endif
#ifndef FAST16_TT
#define FAST16_TT 32
#endif

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B,
                      const float* C, const float* skip, float* y, int batch, int seq_len,
                      int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    if (d_state <= 4)
        launch<4, 1, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 8)
        launch<8, 1, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 16)
        launch<FAST16_NL, 16 / FAST16_NL, FAST16_TT>(u, delta, A, B, C, skip, y, batch, seq_len,
                                                     d_model, d_state);
    else if (d_state <= 32)
        launch<16, 2, 32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else
        launch<16, 4, 32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
