// ssm_selective_scan_backward: the gradient of sum(dy * y) for the Mamba-1
// selective scan, chunked over time, with three exponentials per element and no
// per-step history. The reference until 2026-12-01 (414-437 us on the H200);
// reference/ssm_selective_scan_backward.md has its design, measurements and
// profile, and why the reference that replaced it keeps history instead.
//
// Notation (spec.md, "Math"): per channel (b, d) and state n,
//   a[t] = exp(delta[t]*A), x[t] = delta[t]*u[t]*B[t], h[t] = a[t]*h[t-1] + x[t],
//   g[t] = C[t]*dy[t] + a[t+1]*g[t+1]   (the adjoint, g[seq_len] = 0),
//   q[t] = g[t]*a[t]*h[t-1]              (dL/da[t] times a[t]).
// Every gradient is local in g, h and q. q couples the two recurrences, which run
// in opposite directions; this kernel never forms it. Instead it uses
//   q[t] - q[t+1] = dy[t]*C[t]*h[t] - g[t]*x[t]
// (substitute g[t] = C[t]*dy[t] + a[t+1]*g[t+1] and h[t] = a[t]*h[t-1] + x[t]), so
// over a chunk [t0, t1) of time, with q[t1] known at its boundary,
//   sum_n A*q[t] = sum_n A*q[t1] + sum_{s=t}^{t1-1} (F[s] - R[s]),
//     F[s] = dy[s] * sum_n A*C[s]*h[s]       (needs h only),
//     R[s] = delta[s]*u[s] * sum_n A*B[s]*g[s] (needs g only),
//   sum_{t in chunk} delta[t]*q[t] = q[t1]*sum(delta) + sum_s D[s]*(dy C h - g x)[s],
//     D[s] = delta[t0] + ... + delta[s].
// So the h terms come from a forward sweep and the g terms from a reverse
// sweep, each on its own: no per-step history of either is kept.
//
// Passes (time in chunks of TC steps; a block = 128 channels x one chunk, 64
// threads of 2 channels x 16 states):
//  1. chunk_aggregates: per chunk, h from 0 at the chunk start (its end state
//     is the chunk's contribution to the next chunk's h) and
//     sum_s (a[t0]*...*a[s]) * C[s]*dy[s] (the chunk's contribution to the
//     adjoint flowing into the previous chunk), and sum(delta) per channel.
//  2. carries: per (b, d, n), the true h before each chunk (one thread, walking
//     forward) and a*g after it (another thread, walking backward), with the
//     chunk's decay exp(A*sum(delta)); each thread's loads run a batch of 16
//     chunks ahead of its updates.
//  3. chunk_gradients: per chunk, the forward sweep from the true h (dC, F, the
//     h half of dA) then the reverse sweep from the true a*g (g, du, ddelta, dB,
//     the g half of dA). dB and dC sum over the block's 128 channels through
//     shared memory, 4 steps at a time; F goes to scratch for the reverse sweep.
//  4. finish, one launch for both sums: dA and dskip over (batch, chunk), 8
//     threads per output with 24 loads each in flight and a fixed-order
//     combine; dB and dC over the blocks of channels, 32 loads per thread.
// Three exponentials per (b, t, d, n): pass 1, and each sweep of pass 3.
// No atomics; every sum has one owner, so results are deterministic.
//
// Per-step inputs through a ring: in passes 1 and 3 each step's delta, u and
// dy (and F in the reverse sweep) are fetched by cp.async into a per-thread
// ring of RING steps in shared memory, RING-1 steps ahead. Why: under Nsight
// Compute the chunk kernels run at 12 warps per SM, and a register load one
// step ahead comes about one step's work (~900 issue cycles of a scheduler's
// 3 warps) before its use: less than a DRAM round trip under load. cp.async
// writes shared memory directly, so the deeper prefetch costs no registers;
// each thread copies and reads only its own channels' entries, so no barrier
// guards the ring (cp.async.wait_group is per thread).
//
// Chunks of 44 steps, sized for the official size's waves: 4 x 94 chunks x 4
// blocks of channels = 1504 blocks for the 792 that fit at once (6 per SM),
// 1.9 waves, where 64 steps make 1024 blocks, 1.29 waves (a second wave 29 %
// full). The price: 1.45 times the carries (h, the adjoint aggregate, dA's
// partials).
//
// Every size takes the same code: states in groups of 16 (padded states have
// A = B = C = 0 and stay 0; a thread walks the groups in turn), ragged
// channels and steps copy zeros (cp.async's zero fill: a = 1, no input) and
// are not stored.
//
// Compile-time switches: TC [44], steps per chunk (a multiple of 4); RING [4],
// steps in the ring (a power of two).

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kS = 16;                     // states in a group, held in registers
constexpr int kK = 2;                      // channels per thread: tid and tid + kThreads
constexpr int kThreads = 64;
constexpr int kChannels = kK * kThreads;   // per block
// 6 blocks of 2 warps per SM caps the chunk kernels at 170 registers (their 96
// per-chain registers, 3 x 2 channels x 16 states, and the step's operands): 12
// warps per SM, each thread 32 independent recurrences.
constexpr int kBlocksPerSM = 6;
constexpr int kRound = 4;                  // steps per shared-memory reduction of dB, dC
// A thread's 16 partials for one step: rows of 20 floats put 8 consecutive
// threads' 16-byte stores in 8 distinct bank quads; steps 16 banks apart let the
// two steps a warp reduces at once use all 32 banks.
constexpr int kPitch = kS + 4;
constexpr int kStepStride = kThreads * kPitch + 16;

#ifndef TC
#define TC 44
#endif
#ifndef RING
#define RING 4
#endif
static_assert((RING & (RING - 1)) == 0 && RING >= 2, "the ring's slot is the step's low bits");
static_assert(TC % kRound == 0, "chunks are whole reduction rounds");
static_assert(kThreads == kRound * kS, "one reducing thread per (step, state) of a round");

// 2^x on MUFU as one instruction (exp2f and __expf add a range fix-up without .ftz).
__device__ __forceinline__ float ex2(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

struct Block {
    int b, c, t0, steps, d[kK];
    bool ok[kK];
    size_t row0;  // b*seq_len + t0
    __device__ Block(int L, int D) {
        b = blockIdx.z;
        c = blockIdx.y;
        t0 = c * TC;
        steps = min(TC, L - t0);
        row0 = static_cast<size_t>(b) * L + t0;
#pragma unroll
        for (int k = 0; k < kK; ++k) {
            d[k] = blockIdx.x * kChannels + k * kThreads + threadIdx.x;
            ok[k] = d[k] < D;
        }
    }
};

// B and C of the chunk for states n0 .. n0+15, as rows [step][state] (zeros past the ends).
__device__ void stage_bc(float* sB, float* sC, const float* Bm, const float* Cm, const Block& k, int N, int n0) {
    for (int i = threadIdx.x; i < TC * kS; i += kThreads) {
        const int j = i / kS, n = n0 + i % kS;
        const bool v = j < k.steps && n < N;
        const size_t e = (k.row0 + j) * N + n;
        sB[i] = v ? __ldg(Bm + e) : 0.f;
        sC[i] = v ? __ldg(Cm + e) : 0.f;
    }
}

__device__ __forceinline__ float at(const float4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 4 bytes global -> shared, asynchronously; bytes = 0 zero-fills (src is not read).
__device__ __forceinline__ void cp_async_4(float* dst, const float* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The per-step inputs of the thread's channels: RING slots of up to 4 arrays x
// kChannels floats in shared memory. A thread copies and reads only its own
// entries (channel c's at c*kThreads + tid), so only its own cp.async groups
// order them. One commit group per step; the step's slot is its low bits.
struct Ring {
    static constexpr int kArrays = 4;  // delta, u, dy, and F in the reverse sweep
    static constexpr int kFloats = RING * kArrays * kChannels;
    float* buf;
    // Copies the NA arrays src[0..NA) of step j (zeros outside the chunk or for a
    // channel past D) into step j's slot, and commits them as one group.
    template <int NA>
    __device__ __forceinline__ void issue(const float* const (&src)[NA], const Block& k, int j, int D) const {
        float* slot = buf + (j & (RING - 1)) * (kArrays * kChannels) + threadIdx.x;
#pragma unroll
        for (int c = 0; c < kK; ++c) {
            const bool v = k.ok[c] && j >= 0 && j < k.steps;
            const size_t e = v ? (k.row0 + j) * D + k.d[c] : 0;
#pragma unroll
            for (int a = 0; a < NA; ++a) cp_async_4(slot + a * kChannels + c * kThreads, src[a] + e, v ? 4 : 0);
        }
        cp_async_commit();
    }
    // Array a of channel c at step j, once step j's group has landed.
    __device__ __forceinline__ float at(int j, int a, int c) const {
        return buf[(j & (RING - 1)) * (kArrays * kChannels) + a * kChannels + c * kThreads + threadIdx.x];
    }
};

// Pass 1. h from 0 over the chunk; W = a[t0]*...*a[s] and gam = sum_s W*C[s]*dy[s].
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
chunk_aggregates(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
                 const float* __restrict__ Bm, const float* __restrict__ Cm, const float* __restrict__ dy,
                 float* __restrict__ h_end, float* __restrict__ gam_start, float* __restrict__ dsum, int L, int D,
                 int N, int nc) {
    __shared__ __align__(16) float sB[TC * kS];
    __shared__ __align__(16) float sC[TC * kS];
    __shared__ float ring_buf[Ring::kFloats];
    const Block k(L, D);
    const Ring ring{ring_buf};
    const float* const src[3] = {delta, u, dy};
    const int last = (k.steps + kRound - 1) / kRound * kRound;
    for (int n0 = 0; n0 < N; n0 += kS) {
        __syncthreads();  // the previous group's readers are done with sB, sC
        stage_bc(sB, sC, Bm, Cm, k, N, n0);
        __syncthreads();
        float A2[kK][kS], h[kK][kS], W[kK][kS], gam[kK][kS];
#pragma unroll
        for (int c = 0; c < kK; ++c)
#pragma unroll
            for (int n = 0; n < kS; ++n) {
                A2[c][n] = (k.ok[c] && n0 + n < N) ? A[static_cast<size_t>(k.d[c]) * N + n0 + n] * kLog2e : 0.f;
                h[c][n] = 0.f;
                W[c][n] = 1.f;
                gam[c][n] = 0.f;
            }
        float ds[kK] = {0.f, 0.f};
#pragma unroll
        for (int j = 0; j < RING - 1; ++j) ring.issue(src, k, j, D);
        for (int j = 0; j < last; ++j) {
            ring.issue(src, k, j + RING - 1, D);  // into the slot step j-1 used
            cp_async_wait<RING - 1>();             // step j's group has landed
            const float4* b4 = reinterpret_cast<const float4*>(sB + j * kS);
            const float4* c4 = reinterpret_cast<const float4*>(sC + j * kS);
#pragma unroll
            for (int c = 0; c < kK; ++c) {
                const float dt = ring.at(j, 0, c), dyt = ring.at(j, 2, c), du = dt * ring.at(j, 1, c);
                ds[c] += dt;
#pragma unroll
                for (int q = 0; q < kS / 4; ++q) {
                    const float4 bq = b4[q], cq = c4[q];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int n = 4 * q + i;
                        const float a = ex2(dt * A2[c][n]);
                        h[c][n] = fmaf(a, h[c][n], du * at(bq, i));
                        W[c][n] *= a;
                        gam[c][n] = fmaf(W[c][n], dyt * at(cq, i), gam[c][n]);
                    }
                }
            }
        }
        cp_async_wait<0>();  // the copies past the chunk land before the next group reuses the slots
#pragma unroll
        for (int c = 0; c < kK; ++c) {
            if (!k.ok[c]) continue;
            const size_t base = ((static_cast<size_t>(k.b) * nc + k.c) * D + k.d[c]) * N + n0;
#pragma unroll
            for (int n = 0; n < kS; ++n)
                if (n0 + n < N) {
                    h_end[base + n] = h[c][n];
                    gam_start[base + n] = gam[c][n];
                }
            if (n0 == 0) dsum[(static_cast<size_t>(k.b) * nc + k.c) * D + k.d[c]] = ds[c];
        }
    }
}

// Pass 2, one thread per (b, d, n) and direction, in place: blockIdx.y = 0
// walks h forward (h before each chunk), 1 walks the adjoint backward (a*g
// after each chunk). The two chains share only A and dsum, so they take
// separate threads: twice the warps that one thread doing both would give, each
// with half the dependent chain. The chain is latency-bound (one multiply-add
// per chunk, a DRAM load per chunk), so loads run a batch ahead: a thread
// fetches the next kCarryBatch chunks before it folds in the current ones, so
// 16 to 32 loads stay in flight, where one batch at a time leaves none in flight
// during its updates. (Not a ring refilled slot by slot: each refill load must
// follow the step's store, which may alias it, and ptxas then schedules the
// whole chain first and the refills after it, one batch at a time again.)
constexpr int kCarryThreads = 128;
constexpr int kCarryBatch = 16;  // 2 x 2 x 16 registers, within the 128 that 4 blocks per SM allow

struct CarryWalk {
    float* st;        // the chunk whose carry is stored next
    const float* ld;  // the next chunk to fetch: its own part (h from 0 at its end, or its adjoint aggregate)
    const float* ds;  // that chunk's sum of delta
    int es, dstep;    // one chunk along the walk in each (+-D*N, +-D)
    // The pointers step one chunk at a time, past the walk's end too, but are
    // dereferenced only inside it.
};

// Fetches the walk's next kCarryBatch chunks, those of them still in the walk (left).
__device__ __forceinline__ void carry_fetch(float (&e)[kCarryBatch], float (&s)[kCarryBatch], CarryWalk& w,
                                            int left) {
#pragma unroll
    for (int j = 0; j < kCarryBatch; ++j) {
        if (j < left) {
            e[j] = *w.ld;
            s[j] = *w.ds;
        }
        w.ld += w.es;
        w.ds += w.dstep;
    }
}

// Stores the carry into each of the next kCarryBatch chunks (those still in the
// walk), then folds the chunk in: v = decay*v + e. Past the walk's end v is
// never stored again, so only the store is guarded.
__device__ __forceinline__ float carry_apply(const float (&e)[kCarryBatch], const float (&s)[kCarryBatch],
                                             CarryWalk& w, int left, float a2, float v) {
#pragma unroll
    for (int j = 0; j < kCarryBatch; ++j) {
        if (j < left) *w.st = v;
        v = fmaf(ex2(a2 * s[j]), v, e[j]);
        w.st += w.es;
    }
    return v;
}

__global__ void __launch_bounds__(kCarryThreads, 4)
carries(const float* __restrict__ A, float* __restrict__ h_in, float* __restrict__ gam_in,
        const float* __restrict__ dsum, int batch, int D, int N, int nc) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * D * N) return;
    const int n = static_cast<int>(i % N), d = static_cast<int>(i / N % D), b = static_cast<int>(i / (N * D));
    const bool rev = blockIdx.y != 0;
    const float a2 = A[static_cast<size_t>(d) * N + n] * kLog2e;
    const size_t c0 = rev ? nc - 1 : 0;  // the walk's first chunk
    CarryWalk w;
    w.st = (rev ? gam_in : h_in) + (static_cast<size_t>(b) * nc + c0) * D * N + d * N + n;
    w.ld = w.st;
    w.ds = dsum + (static_cast<size_t>(b) * nc + c0) * D + d;
    w.es = rev ? -D * N : D * N;
    w.dstep = rev ? -D : D;
    float e0[kCarryBatch] = {}, s0[kCarryBatch] = {}, e1[kCarryBatch] = {}, s1[kCarryBatch] = {};
    float v = 0.f;
    carry_fetch(e0, s0, w, nc);
    for (int k = 0; k < nc; k += 2 * kCarryBatch) {
        carry_fetch(e1, s1, w, nc - k - kCarryBatch);
        v = carry_apply(e0, s0, w, nc - k, a2, v);
        carry_fetch(e0, s0, w, nc - k - 2 * kCarryBatch);
        v = carry_apply(e1, s1, w, nc - k - kCarryBatch, a2, v);
    }
}

// Sum over the block's threads of each thread's 16 partials for the round's 4
// steps; the thread (j, n) writes step j, state n0 + n to out (rows of N).
__device__ __forceinline__ void reduce_round(const float* red, float* out, const Block& k, int j0, int N, int n0) {
    __syncthreads();
    const int j = threadIdx.x / kS, n = threadIdx.x % kS;
    const float* p = red + j * kStepStride + n;
    float s = 0.f;
#pragma unroll 16
    for (int r = 0; r < kThreads; ++r) s += p[r * kPitch];
    if (j0 + j < k.steps && n0 + n < N) out[(k.row0 + j0 + j) * N + n0 + n] = s;
    __syncthreads();
}

__device__ __forceinline__ void put_partials(float* red, int jj, const float (&v)[kS]) {
    float4* row = reinterpret_cast<float4*>(red + jj * kStepStride + threadIdx.x * kPitch);
#pragma unroll
    for (int q = 0; q < kS / 4; ++q) row[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
}

// Pass 3. dB_out and dC_out are this block of channels' partial sums (rows of N).
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
chunk_gradients(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
                const float* __restrict__ Bm, const float* __restrict__ Cm, const float* __restrict__ skip,
                const float* __restrict__ dy, const float* __restrict__ h_in, const float* __restrict__ gam_in,
                float* __restrict__ fscr, float* __restrict__ du, float* __restrict__ ddelta,
                float* __restrict__ dA_part, float* __restrict__ dskip_part, float* __restrict__ dB_part,
                float* __restrict__ dC_part, int L, int D, int N, int nc) {
    __shared__ __align__(16) float sB[TC * kS];
    __shared__ __align__(16) float sC[TC * kS];
    __shared__ __align__(16) float red[kRound * kStepStride];
    __shared__ float ring_buf[Ring::kFloats];
    const Block k(L, D);
    const Ring ring{ring_buf};
    const float* const fwd_src[3] = {delta, u, dy};
    const float* const rev_src[4] = {delta, u, dy, fscr};
    const int last = (k.steps + kRound - 1) / kRound * kRound;  // steps rounded up to whole rounds
    const size_t part_rows = static_cast<size_t>(gridDim.z) * L;  // one block of channels' dB or dC partials
    float* dB_out = dB_part + blockIdx.x * part_rows * N;
    float* dC_out = dC_part + blockIdx.x * part_rows * N;
    float sk[kK], dsk[kK] = {0.f, 0.f};
#pragma unroll
    for (int c = 0; c < kK; ++c) sk[c] = k.ok[c] ? skip[k.d[c]] : 0.f;

    for (int n0 = 0; n0 < N; n0 += kS) {
        __syncthreads();
        stage_bc(sB, sC, Bm, Cm, k, N, n0);
        __syncthreads();
        float A2[kK][kS], h[kK][kS], dA[kK][kS];
        size_t carry[kK];
#pragma unroll
        for (int c = 0; c < kK; ++c) {
            carry[c] = ((static_cast<size_t>(k.b) * nc + k.c) * D + k.d[c]) * N + n0;
#pragma unroll
            for (int n = 0; n < kS; ++n) {
                const bool v = k.ok[c] && n0 + n < N;
                A2[c][n] = v ? A[static_cast<size_t>(k.d[c]) * N + n0 + n] * kLog2e : 0.f;
                h[c][n] = v ? h_in[carry[c] + n] : 0.f;
                dA[c][n] = 0.f;
            }
        }

        // Forward sweep: h, dC, F, and the h half of dA.
        float Dl[kK] = {0.f, 0.f};
#pragma unroll
        for (int j = 0; j < RING - 1; ++j) ring.issue(fwd_src, k, j, D);
        for (int j0 = 0; j0 < last; j0 += kRound) {
#pragma unroll 1
            for (int jj = 0; jj < kRound; ++jj) {
                const int j = j0 + jj;
                ring.issue(fwd_src, k, j + RING - 1, D);
                cp_async_wait<RING - 1>();
                const float4* b4 = reinterpret_cast<const float4*>(sB + j * kS);
                const float4* c4 = reinterpret_cast<const float4*>(sC + j * kS);
                float v[kS];  // dC partials: sum over the thread's channels of dy*h
#pragma unroll
                for (int c = 0; c < kK; ++c) {
                    const float dt = ring.at(j, 0, c), ut = ring.at(j, 1, c), dyt = ring.at(j, 2, c), du_ = dt * ut;
                    Dl[c] += dt;
                    const float ddy = Dl[c] * dyt;
                    float accF = 0.f;
#pragma unroll
                    for (int q = 0; q < kS / 4; ++q) {
                        const float4 bq = b4[q], cq = c4[q];
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            const int n = 4 * q + i;
                            h[c][n] = fmaf(ex2(dt * A2[c][n]), h[c][n], du_ * at(bq, i));
                            const float ch = at(cq, i) * h[c][n];
                            accF = fmaf(A2[c][n], ch, accF);
                            dA[c][n] = fmaf(ddy, ch, dA[c][n]);
                            v[n] = c == 0 ? dyt * h[c][n] : fmaf(dyt, h[c][n], v[n]);
                        }
                    }
                    if (k.ok[c] && j < k.steps) fscr[(k.row0 + j) * D + k.d[c]] = kLn2 * dyt * accF;
                    if (n0 == 0) dsk[c] = fmaf(dyt, ut, dsk[c]);
                }
                put_partials(red, jj, v);
            }
            reduce_round(red, dC_out, k, j0, N, n0);
        }
        cp_async_wait<0>();     // the copies past the chunk land before the reverse sweep reuses the slots
        __threadfence_block();  // this thread's F stores precede its copies of them below

        // The chunk's end: q[t1] = (a*g after the chunk) * h[t1-1].
        float S[kK];  // sum_n A*q[t1], then + F - R step by step
#pragma unroll
        for (int c = 0; c < kK; ++c) {
            float s = 0.f;
#pragma unroll
            for (int n = 0; n < kS; ++n) {
                const float gin = (k.ok[c] && n0 + n < N) ? gam_in[carry[c] + n] : 0.f;
                const float q = gin * h[c][n];
                s = fmaf(A2[c][n], q, s);
                dA[c][n] = fmaf(q, Dl[c], dA[c][n]);
                h[c][n] = gin;  // from here on h holds g; at the last step g = C*dy + gin
            }
            S[c] = kLn2 * s;
        }

        // Reverse sweep: g, du, ddelta, dB, and the g half of dA.
        float dnext[kK] = {0.f, 0.f};  // delta of the step after: a[t+1] = 1 past the chunk (gin holds it)
#pragma unroll
        for (int i = 0; i < RING - 1; ++i) ring.issue(rev_src, k, last - 1 - i, D);
        for (int j0 = last - kRound; j0 >= 0; j0 -= kRound) {
#pragma unroll 1
            for (int jj = kRound - 1; jj >= 0; --jj) {
                const int j = j0 + jj;
                ring.issue(rev_src, k, j - (RING - 1), D);
                cp_async_wait<RING - 1>();
                const float4* b4 = reinterpret_cast<const float4*>(sB + j * kS);
                const float4* c4 = reinterpret_cast<const float4*>(sC + j * kS);
                float w[kS];  // dB partials: sum over the thread's channels of g*delta*u
#pragma unroll
                for (int c = 0; c < kK; ++c) {
                    const float dt = ring.at(j, 0, c), ut = ring.at(j, 1, c), dyt = ring.at(j, 2, c);
                    const float F = ring.at(j, 3, c), du_ = dt * ut;
                    const float mdu = -Dl[c] * du_;
                    const bool store = k.ok[c] && j < k.steps;
                    const size_t e = (k.row0 + j) * D + k.d[c];
                    float sgB = 0.f, accR = 0.f;
#pragma unroll
                    for (int q = 0; q < kS / 4; ++q) {
                        const float4 bq = b4[q], cq = c4[q];
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            const int n = 4 * q + i;
                            const float g = fmaf(ex2(dnext[c] * A2[c][n]), h[c][n], dyt * at(cq, i));
                            h[c][n] = g;
                            const float gB = g * at(bq, i);
                            sgB += gB;
                            accR = fmaf(A2[c][n], gB, accR);
                            dA[c][n] = fmaf(mdu, gB, dA[c][n]);
                            w[n] = c == 0 ? du_ * g : fmaf(du_, g, w[n]);
                        }
                    }
                    S[c] += F - kLn2 * du_ * accR;
                    if (store) {
                        float dd = S[c] + ut * sgB, dx = dt * sgB;
                        if (n0 == 0) {
                            dx = fmaf(sk[c], dyt, dx);
                        } else {  // later state groups add to the earlier groups' sums
                            dd += ddelta[e];
                            dx += du[e];
                        }
                        ddelta[e] = dd;
                        du[e] = dx;
                    }
                    Dl[c] -= dt;
                    dnext[c] = dt;
                }
                put_partials(red, jj, w);
            }
            reduce_round(red, dB_out, k, j0, N, n0);
        }
        cp_async_wait<0>();

#pragma unroll
        for (int c = 0; c < kK; ++c)
            if (k.ok[c]) {
#pragma unroll
                for (int n = 0; n < kS; ++n)
                    if (n0 + n < N) dA_part[carry[c] + n] = dA[c][n];
            }
    }
#pragma unroll
    for (int c = 0; c < kK; ++c)
        if (k.ok[c]) dskip_part[(static_cast<size_t>(k.b) * nc + k.c) * D + k.d[c]] = dsk[c];
}

// Pass 4, one launch for both sums (a block does one job; blocks [0, param_blocks)
// do dA and dskip). Both are small reductions (12 MB and 8 MB of partials at the
// official size) that wait on DRAM latency unless many loads are in flight, so
// each thread issues all of a round's loads before its first add.
constexpr int kFinishThreads = 256;
constexpr int kSlices = kFinishThreads / 32;
constexpr int kParamLoads = 24;  // a thread's parts per round: 2 rounds for 47 parts (4 x 94 / 8)
constexpr int kBcElems = 4;      // dB and dC elements per thread, kFinishThreads apart
constexpr int kBcParts = 4;      // blocks of channels per round: one round at the official size
constexpr int kBcTile = kFinishThreads * kBcElems;

// dA and dskip summed over the parts (batch, chunk). A block of 32 x kSlices
// threads takes 32 consecutive outputs (dA's D*N, then dskip's D); row y sums
// parts y, y + kSlices, ... in that order, so every warp reads 32 consecutive
// floats of a part, and row 0 adds the kSlices rows in order.
__device__ __forceinline__ void finish_params(const float* __restrict__ dA_part, const float* __restrict__ dskip_part,
                                              float* __restrict__ dA, float* __restrict__ dskip, int parts, int D,
                                              int N, unsigned blk) {
    __shared__ float rows[kSlices][33];
    const int x = threadIdx.x % 32, y = threadIdx.x / 32;
    const size_t a_elems = static_cast<size_t>(D) * N;
    const size_t i = static_cast<size_t>(blk) * 32 + x;
    const bool is_a = i < a_elems, ok = i < a_elems + D;
    const size_t stride = is_a ? a_elems : static_cast<size_t>(D);
    const float* src = is_a ? dA_part + i : dskip_part + (ok ? i - a_elems : 0);
    float s = 0.f;
    if (ok) {
        const size_t step = kSlices * stride;  // from a thread's part to its next
        for (int p0 = y; p0 < parts; p0 += kSlices * kParamLoads) {
            const float* part = src + p0 * stride;
            float v[kParamLoads];
#pragma unroll
            for (int j = 0; j < kParamLoads; ++j, part += step)
                if (p0 + j * kSlices < parts) v[j] = *part;
#pragma unroll
            for (int j = 0; j < kParamLoads; ++j)
                if (p0 + j * kSlices < parts) s += v[j];
        }
    }
    rows[y][x] = s;
    __syncthreads();
    if (y != 0 || !ok) return;
    float t = 0.f;
#pragma unroll
    for (int r = 0; r < kSlices; ++r) t += rows[r][x];
    if (is_a) dA[i] = t;
    else dskip[i - a_elems] = t;
}

// dB and dC summed over the blocks of channels, each element's in block order;
// a thread takes kBcElems elements kFinishThreads apart (coalesced per warp).
__device__ __forceinline__ void finish_bc(const float* __restrict__ dB_part, const float* __restrict__ dC_part,
                                          float* __restrict__ dB, float* __restrict__ dC, int channel_blocks,
                                          size_t bc_elems, unsigned blk) {
    const size_t i0 = static_cast<size_t>(blk) * kBcTile + threadIdx.x;
    bool ok[kBcElems];
    float sb[kBcElems], sc[kBcElems];
#pragma unroll
    for (int e = 0; e < kBcElems; ++e) {
        ok[e] = i0 + e * kFinishThreads < bc_elems;
        sb[e] = sc[e] = 0.f;
    }
    for (int p0 = 0; p0 < channel_blocks; p0 += kBcParts) {
        float vb[kBcParts][kBcElems], vc[kBcParts][kBcElems];
#pragma unroll
        for (int q = 0; q < kBcParts; ++q) {
            const size_t row = (p0 + q) * bc_elems + i0;
#pragma unroll
            for (int e = 0; e < kBcElems; ++e)
                if (p0 + q < channel_blocks && ok[e]) {
                    vb[q][e] = dB_part[row + e * kFinishThreads];
                    vc[q][e] = dC_part[row + e * kFinishThreads];
                }
        }
#pragma unroll
        for (int q = 0; q < kBcParts; ++q)
#pragma unroll
            for (int e = 0; e < kBcElems; ++e)
                if (p0 + q < channel_blocks && ok[e]) {
                    sb[e] += vb[q][e];
                    sc[e] += vc[q][e];
                }
    }
#pragma unroll
    for (int e = 0; e < kBcElems; ++e)
        if (ok[e]) {
            dB[i0 + e * kFinishThreads] = sb[e];
            dC[i0 + e * kFinishThreads] = sc[e];
        }
}

// One launch instead of two: the sums share the machine, and one launch gap
// fewer. Which job a block does depends only on its index, so every sum keeps
// its fixed order.
__global__ void __launch_bounds__(kFinishThreads, 4)
finish(const float* __restrict__ dA_part, const float* __restrict__ dskip_part, float* __restrict__ dA,
       float* __restrict__ dskip, int parts, int D, int N, unsigned param_blocks, const float* __restrict__ dB_part,
       const float* __restrict__ dC_part, float* __restrict__ dB, float* __restrict__ dC, int channel_blocks,
       size_t bc_elems) {
    if (blockIdx.x < param_blocks)
        finish_params(dA_part, dskip_part, dA, dskip, parts, D, N, blockIdx.x);
    else
        finish_bc(dB_part, dC_part, dB, dC, channel_blocks, bc_elems, blockIdx.x - param_blocks);
}

float* g_scratch = nullptr;
size_t g_scratch_floats = 0;

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, const float* dy, float* du, float* ddelta, float* dA, float* dB,
                      float* dC, float* dskip, int batch, int seq_len, int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    const int L = seq_len, D = d_model, N = d_state;
    const int nc = (L + TC - 1) / TC, channel_blocks = (D + kChannels - 1) / kChannels;
    const size_t states = static_cast<size_t>(batch) * nc * D * N;  // one float per (b, chunk, d, n)
    const size_t sums = static_cast<size_t>(batch) * nc * D;       // one per (b, chunk, d)
    const size_t bc_elems = static_cast<size_t>(batch) * L * N;
    const size_t bc_parts = channel_blocks > 1 ? channel_blocks * bc_elems : 0;
    const size_t need = 3 * states + 2 * sums + static_cast<size_t>(batch) * L * D + 2 * bc_parts;
    if (need > g_scratch_floats) {  // grown on demand, kept between calls; contents never reused
        if (g_scratch) cudaFree(g_scratch);
        if (cudaMalloc(&g_scratch, need * sizeof(float)) != cudaSuccess) {
            g_scratch = nullptr;
            g_scratch_floats = 0;
            return;
        }
        g_scratch_floats = need;
    }
    float* h_carry = g_scratch;           // pass 1: h at the chunk end from 0; pass 2: h before the chunk
    float* gam_carry = h_carry + states;  // pass 1: the chunk's adjoint aggregate; pass 2: a*g after the chunk
    float* dA_part = gam_carry + states;
    float* dsum = dA_part + states;
    float* dskip_part = dsum + sums;
    float* fscr = dskip_part + sums;
    float* dB_part = channel_blocks > 1 ? fscr + static_cast<size_t>(batch) * L * D : dB;
    float* dC_part = channel_blocks > 1 ? dB_part + bc_parts : dC;

    static bool carveout_set = false;
    if (!carveout_set) {
        // The largest shared-memory carveout: 6 blocks of chunk_gradients (37 KB of
        // shared memory each) per SM, as its register bound allows.
        cudaFuncSetAttribute(chunk_gradients, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
        carveout_set = true;
    }
    const dim3 grid(channel_blocks, nc, batch);
    chunk_aggregates<<<grid, kThreads>>>(u, delta, A, B, C, dy, h_carry, gam_carry, dsum, L, D, N, nc);
    const size_t chains = static_cast<size_t>(batch) * D * N;
    const dim3 carry_grid(static_cast<unsigned>((chains + kCarryThreads - 1) / kCarryThreads), 2);  // y: direction
    carries<<<carry_grid, kCarryThreads>>>(A, h_carry, gam_carry, dsum, batch, D, N, nc);
    chunk_gradients<<<grid, kThreads>>>(u, delta, A, B, C, skip, dy, h_carry, gam_carry, fscr, du, ddelta,
                                        dA_part, dskip_part, dB_part, dC_part, L, D, N, nc);
    const size_t params = static_cast<size_t>(D) * N + D;
    const unsigned param_blocks = static_cast<unsigned>((params + 31) / 32);
    const unsigned bc_blocks = channel_blocks > 1 ? static_cast<unsigned>((bc_elems + kBcTile - 1) / kBcTile) : 0;
    finish<<<param_blocks + bc_blocks, kFinishThreads>>>(dA_part, dskip_part, dA, dskip, batch * nc, D, N, param_blocks,
                                                         dB_part, dC_part, dB, dC, channel_blocks, bc_elems);
}
