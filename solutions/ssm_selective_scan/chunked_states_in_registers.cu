// ssm_selective_scan: chunked scan, one thread per (batch, chunk, channel)
// holding all of the channel's states, B and C broadcast from shared memory.
// The reference before the single pass in reference/ssm_selective_scan.cu;
// H200, (4, 4096, 512, 16): 123-132 us (reference/ssm_selective_scan.md).
//
// Why chunks: 2048 channels of 16 states are too few recurrences to fill 132
// SMs with one channel per thread, and splitting a channel's states over lanes
// (solutions/ssm_selective_scan/lane_split_single_pass.cu) costs a cross-lane
// reduction and shared-memory traffic per step. Splitting time into chunks of
// CL steps gives each thread a whole channel (16 independent FMA chains, no
// reduction) and 1000+ blocks. The price: every chunk but the last is scanned
// twice, so each exponential is computed about twice.
//
//  1. chunk_state: chunks 0..K-2 scan from h = 0 and store their end state and
//     the sum of their deltas (a chunk's decay is prod exp(delta*A) =
//     exp(A * sum delta): one exponential per chunk and state).
//  2. carry: one thread per (b, n, d) folds the chunk states in order,
//     h_in[k+1] = exp(A * dsum_k) * h_in[k] + end_k, loading kCarryGroup
//     chunks at once so the loads overlap instead of chaining round trips.
//  3. chunk_output: each chunk scans again from its true h_in and writes y.
//
// Per step and state: one multiply for delta*A*log2(e) (log2(e) folded into A),
// one ex2, one multiply for delta*u*B, the h FMA and, in pass 3, the C.h FMA.
// B_t and C_t are the same for every channel: each block stages its chunk's
// rows in shared memory once and threads read them as float4 broadcasts. u,
// delta and y move once per pass, coalesced along d.
//
// Compile-time switches (defaults in brackets; the notes measure each step):
//   EX2_ASM [1]  ex2 as inline `ex2.approx.ftz.f32`: one issue slot. exp2f
//                and __expf compile to ex2.approx.f32 without .ftz (unless the
//                whole file is built with -ftz=true), which adds a range test
//                and two predicated multiplies for denormal results.
//   POLY_A [3], POLY_B [1]  states per step whose 2^x comes from a polynomial
//                on the FMA pipe instead of MUFU, in pass 1 and pass 3: MUFU
//                is the busiest pipe, the FMA pipe has room.
//   CHUNK [64]   chunk length for d_state <= 16.
//   UNROLL_T [2] time steps unrolled in the two scans.
//
// Accuracy: the per-step decays chain within one chunk only (at most CL steps),
// and the carry between chunks uses one exponential of the summed deltas, so
// the small bias of the hardware ex2 cannot drift over thousands of steps.

#include <cuda_runtime.h>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kThreads = 128;  // channels per block
constexpr int kCarryGroup = 32;  // chunk states loaded at once by the carry pass

#ifndef EX2_ASM
#define EX2_ASM 1
#endif
#ifndef CHUNK
#define CHUNK 64
#endif
#ifndef POLY_A
#define POLY_A 3
#endif
#ifndef POLY_B
#define POLY_B 1
#endif
#ifndef UNROLL_T
#define UNROLL_T 2
#endif
#define PRAGMA_(x) _Pragma(#x)
#define UNROLL_STEPS(n) PRAGMA_(unroll n)
// Chunk length: CHUNK steps; 64 for d_state > 16 (shared memory for B and C rows).
constexpr int chunk_len(int NS) { return NS <= 16 ? CHUNK : 64; }

// 2^r = 1 + r*q(r) on |r| <= 1/2: q is a degree-4 near-minimax fit (max relative
// error of 2^r 1.7e-7 in float32, exact at r = 0).
__device__ __forceinline__ float poly_q(float r) {
    float q = fmaf(0.001326472731307149f, r, 0.009671512991189957f);
    q = fmaf(q, r, 0.05550733581185341f);
    q = fmaf(q, r, 0.24022242426872253f);
    return fmaf(q, r, 0.6931470036506653f);
}

// 2^x for x <= 0 on the FMA pipe: x = j + r, 2^j added to the exponent field.
__device__ __forceinline__ float ex2_poly(float x) {
    x = fmaxf(x, -125.f);  // keeps the result normal; 2^-125 is 0 to the tolerance
    const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
    const float t = x + magic;
    const float r = x - (t - magic);
    const float p = fmaf(poly_q(r), r, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// 2^x on the MUFU unit (see EX2_ASM above). Flushing denormal results to 0 is
// far below the tolerance.
__device__ __forceinline__ float ex2_mufu(float x) {
#if EX2_ASM
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return exp2f(x);
#endif
}

// exp(delta * A), with a2 = A*log2(e); `poly` is a constant once the state loop is unrolled.
__device__ __forceinline__ float decay(float dt, float a2, bool poly) {
    return poly ? ex2_poly(dt * a2) : ex2_mufu(dt * a2);
}

// The chunk's rows of B (and C) in shared memory, [step][state], zero past the
// sequence and past d_state (padded states then have B = C = 0 and stay 0).
template <int NS, int CL>
__device__ __forceinline__ void stage_rows(float* dst, const float* __restrict__ src, size_t row0, int t0,
                                           int L, int N) {
    for (int i = threadIdx.x; i < CL * NS; i += kThreads) {
        const int tt = i / NS, n = i % NS;
        dst[i] = (t0 + tt < L && n < N) ? src[(row0 + t0 + tt) * N + n] : 0.f;
    }
}

template <int NS, int CL>
__global__ void __launch_bounds__(kThreads)
chunk_state(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
            const float* __restrict__ B, float* __restrict__ end, float* __restrict__ dsum, int L, int D,
            int N, int K) {
    __shared__ __align__(16) float sB[CL * NS];
    const int d = blockIdx.x * kThreads + threadIdx.x, k = blockIdx.y, b = blockIdx.z;
    const size_t row0 = static_cast<size_t>(b) * L;
    const int t0 = k * CL, t1 = min(L, t0 + CL);
    stage_rows<NS, CL>(sB, B, row0, t0, L, N);
    __syncthreads();
    if (d >= D) return;
    float a2[NS], h[NS];
#pragma unroll
    for (int n = 0; n < NS; ++n) {
        a2[n] = n < N ? A[static_cast<size_t>(d) * N + n] * kLog2e : 0.f;
        h[n] = 0.f;
    }
    float ds = 0.f;
    UNROLL_STEPS(UNROLL_T)
    for (int t = t0; t < t1; ++t) {
        const size_t i = (row0 + t) * D + d;
        const float dt = delta[i], du = dt * u[i];
        ds += dt;
        const float4* b4 = reinterpret_cast<const float4*>(sB + (t - t0) * NS);
#pragma unroll
        for (int q = 0; q < NS / 4; ++q) {
            const float4 bb = b4[q];
            const float bv[4] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int n = 4 * q + j;
                h[n] = fmaf(decay(dt, a2[n], n < POLY_A), h[n], du * bv[j]);
            }
        }
    }
    // layout [b][k][n][d]: coalesced here and in the carry pass
    const size_t base = (static_cast<size_t>(b) * K + k) * NS;
#pragma unroll
    for (int n = 0; n < NS; ++n) end[(base + n) * D + d] = h[n];
    dsum[(static_cast<size_t>(b) * K + k) * D + d] = ds;
}

template <int NS>
__global__ void carry(const float* __restrict__ A, const float* __restrict__ end, const float* __restrict__ dsum,
                      float* __restrict__ hin, int D, int N, int K, int batch) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // (b, n, d), d fastest
    if (i >= batch * NS * D) return;
    const int d = i % D, n = (i / D) % NS, b = i / (D * NS);
    const float a2 = n < N ? A[static_cast<size_t>(d) * N + n] * kLog2e : 0.f;
    float h = 0.f;
    for (int k0 = 0; k0 < K - 1; k0 += kCarryGroup) {
        float e[kCarryGroup], s[kCarryGroup];
#pragma unroll
        for (int j = 0; j < kCarryGroup; ++j) {  // independent loads, issued together
            const int k = k0 + j;
            e[j] = k < K - 1 ? end[((static_cast<size_t>(b) * K + k) * NS + n) * D + d] : 0.f;
            s[j] = k < K - 1 ? dsum[(static_cast<size_t>(b) * K + k) * D + d] : 0.f;
        }
#pragma unroll
        for (int j = 0; j < kCarryGroup; ++j) {
            const int k = k0 + j;
            if (k < K - 1) {
                h = fmaf(ex2_mufu(a2 * s[j]), h, e[j]);
                hin[((static_cast<size_t>(b) * K + k + 1) * NS + n) * D + d] = h;
            }
        }
    }
}

template <int NS, int CL>
__global__ void __launch_bounds__(kThreads)
chunk_output(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
             const float* __restrict__ B, const float* __restrict__ C, const float* __restrict__ skip,
             const float* __restrict__ hin, float* __restrict__ y, int L, int D, int N, int K) {
    __shared__ __align__(16) float sB[CL * NS];
    __shared__ __align__(16) float sC[CL * NS];
    const int d = blockIdx.x * kThreads + threadIdx.x, k = blockIdx.y, b = blockIdx.z;
    const size_t row0 = static_cast<size_t>(b) * L;
    const int t0 = k * CL, t1 = min(L, t0 + CL);
    stage_rows<NS, CL>(sB, B, row0, t0, L, N);
    stage_rows<NS, CL>(sC, C, row0, t0, L, N);
    __syncthreads();
    if (d >= D) return;
    float a2[NS], h[NS];
    const size_t base = (static_cast<size_t>(b) * K + k) * NS;
#pragma unroll
    for (int n = 0; n < NS; ++n) {
        a2[n] = n < N ? A[static_cast<size_t>(d) * N + n] * kLog2e : 0.f;
        h[n] = k > 0 ? hin[(base + n) * D + d] : 0.f;
    }
    const float sk = skip[d];
    UNROLL_STEPS(UNROLL_T)
    for (int t = t0; t < t1; ++t) {
        const size_t i = (row0 + t) * D + d;
        const float dt = delta[i], ut = u[i];
        const float du = dt * ut;
        float acc0 = sk * ut, acc1 = 0.f;  // two partial sums: a shorter dependent chain
        const float4* b4 = reinterpret_cast<const float4*>(sB + (t - t0) * NS);
        const float4* c4 = reinterpret_cast<const float4*>(sC + (t - t0) * NS);
#pragma unroll
        for (int q = 0; q < NS / 4; ++q) {
            const float4 bb = b4[q], cc = c4[q];
            const float bv[4] = {bb.x, bb.y, bb.z, bb.w}, cv[4] = {cc.x, cc.y, cc.z, cc.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int n = 4 * q + j;
                h[n] = fmaf(decay(dt, a2[n], n < POLY_B), h[n], du * bv[j]);
                if (j % 2 == 0) acc0 = fmaf(cv[j], h[n], acc0);
                else acc1 = fmaf(cv[j], h[n], acc1);
            }
        }
        y[i] = acc0 + acc1;
    }
}

float* g_scratch = nullptr;
size_t g_scratch_floats = 0;

template <int NS>
void run(const float* u, const float* delta, const float* A, const float* B, const float* C,
         const float* skip, float* y, int batch, int L, int D, int N) {
    constexpr int CL = chunk_len(NS);
    const int K = (L + CL - 1) / CL;
    const size_t states = static_cast<size_t>(batch) * K * NS * D;
    const size_t need = 2 * states + static_cast<size_t>(batch) * K * D;
    if (need > g_scratch_floats) {  // grown on demand, kept between calls; contents never reused
        if (g_scratch) cudaFree(g_scratch);
        if (cudaMalloc(&g_scratch, need * sizeof(float)) != cudaSuccess) {
            g_scratch = nullptr;
            g_scratch_floats = 0;
            return;
        }
        g_scratch_floats = need;
    }
    float* end = g_scratch;
    float* hin = g_scratch + states;
    float* dsum = g_scratch + 2 * states;
    const dim3 tiles((D + kThreads - 1) / kThreads, K, batch);
    if (K > 1) {
        chunk_state<NS, CL><<<dim3(tiles.x, K - 1, batch), kThreads>>>(u, delta, A, B, end, dsum, L, D, N, K);
        const int total = batch * NS * D;
        carry<NS><<<(total + 255) / 256, 256>>>(A, end, dsum, hin, D, N, K, batch);
    }
    chunk_output<NS, CL><<<tiles, kThreads>>>(u, delta, A, B, C, skip, hin, y, L, D, N, K);
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B,
                      const float* C, const float* skip, float* y, int batch, int seq_len,
                      int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    if (d_state <= 4) run<4>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 8) run<8>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 16) run<16>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 32) run<32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else run<64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
