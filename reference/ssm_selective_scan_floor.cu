// The arithmetic floor of ssm_selective_scan on the GPU at hand: the per-state
// work of the recurrence with every operand already in registers (no loads, no
// stores), for the official size's 4*4096*512*16 = 134.2 M state updates. The
// first lines leave out the sum of y over a channel's states too; the next ones
// add it in each way a single pass can lay out its 32768 recurrences (S states
// per lane, the sum across 16 / S lanes); the last ones lay lanes along time
// instead (time_lanes: a lane's steps, a scan across lanes, no sum across
// lanes), with B and C in registers or read from shared memory. A real kernel
// does all of this plus its data movement, so no kernel of the same arithmetic
// and layout can be faster than the line printed here for it.
//
//   nvcc -O3 -arch=sm_90 reference/ssm_selective_scan_floor.cu -o /tmp/floor && /tmp/floor
//
// Per update: x = dt*a (FMUL), e = 2^x (MUFU ex2, or a polynomial on the FMA
// pipe for a chosen share), b = du*B (FMUL), h = e*h + b (FFMA), y_t += C*h
// (FFMA, one sum per step as y needs). dt and du change by one FFMA each per
// step and lane, standing in for the cheapest possible delivery of inputs.
//
// Each line is timed with CUDA events over 30 launches (after 3 warm-ups) at 1x
// and 2x the official work; the difference of the medians ("per 1x") is the
// time of the official size's arithmetic with the launch overhead taken out.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        const cudaError_t err_ = (call);                                                   \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

namespace {

constexpr long long kUpdates = 4LL * 4096 * 512 * 16;  // batch * seq_len * d_model * d_state
constexpr int kThreads = 128;
constexpr int kMaxWarps = 8192;
constexpr int kTimeThreads = 256;  // 8 warps: 2 blocks (16 warps) per SM

__device__ __forceinline__ float ex2_mufu(float x) {
    float r;
    asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// 2^x on the FMA pipe, float32-accurate (as in chunked_states_in_registers.cu):
// x = j + r with |r| <= 1/2, 2^r by a degree-5 polynomial, j added to the exponent.
__device__ __forceinline__ float ex2_poly(float x) {
    x = fmaxf(x, -125.f);
    const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
    const float t = x + magic;
    const float r = x - (t - magic);
    float q = fmaf(0.001326472731307149f, r, 0.009671512991189957f);
    q = fmaf(q, r, 0.05550733581185341f);
    q = fmaf(q, r, 0.24022242426872253f);
    q = fmaf(q, r, 0.6931470036506653f);
    const float p = fmaf(q, r, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Reduce-scatter of M values held per lane over M lanes (o = M / 2 apart first):
// lanes o apart keep one half each and add the other's; y[0] ends as this lane's
// sum over the M lanes of one of the M values. SELECT = false drops the two
// selects per exchange (a lane always keeps the lower half and sends the upper:
// the sums are then not the channel's, but the shuffles and adds are those of any
// exchange, which is what a schedule that skews partner lanes in time would pay).
template <int M, int N, bool SELECT = true>
__device__ __forceinline__ void reduce_scatter(float (&y)[N], int lane) {
    if constexpr (M > 1) {
        constexpr int O = M / 2;
        const bool upper = SELECT && (lane & O);
#pragma unroll
        for (int k = 0; k < O; ++k) {
            const float keep = upper ? y[k + O] : y[k], send = upper ? y[k] : y[k + O];
            y[k] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        reduce_scatter<O, N, SELECT>(y, lane);
    }
}

// How a kernel sums each step's y over the G = 16 / S lanes of a channel: not at
// all (the floor lines), after each block of G steps, or a block later, so that
// the exchange of one block overlaps the next block's updates (as the reference
// does); the last without the selects.
enum class Sum { kNone, kAfterBlock, kOverlapped, kOverlappedNoSelect };

// S states per lane (the reference holds 2). POLY k > 0: every k-th exponential
// of a lane is the polynomial. EX2_ONLY: only x and 2^x, summed (the MUFU
// throughput). SUM: a channel's 16 states lie on G = 16 / S lanes, and each
// step's y is summed over them as a kernel must: per G steps, a reduce-scatter
// (G - 1 shuffles, G - 1 adds, 2 (G - 1) selects) leaves one step's sum per lane.
template <int POLY, bool EX2_ONLY, int S = 2, Sum SUM = Sum::kNone>
__global__ void __launch_bounds__(kThreads) updates(float* out, int steps) {
    constexpr bool REDUCE = SUM != Sum::kNone, OVERLAP = SUM == Sum::kOverlapped || SUM == Sum::kOverlappedNoSelect;
    constexpr int G = REDUCE ? 16 / S : 8;  // steps per block of y sums
    const int lane = threadIdx.x & 31;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float a[S], h[S], b[S], c[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
        a[s] = -(0.05f + 0.001f * (tid % 97) + 0.1f * s) * 1.4426950408889634f;
        h[s] = 0.f;
        b[s] = 0.3f + 0.01f * s;
        c[s] = 0.7f - 0.02f * s;
    }
    float dt = 0.05f + 1e-7f * (tid % 1000), du = 0.3f;
    float y[G] = {}, prev[G] = {}, kept = 0.f;
    for (int i = 0; i < steps; i += G) {
        if (OVERLAP) {  // the previous block's exchange, independent of this block's updates
            reduce_scatter<G, G, SUM == Sum::kOverlapped>(prev, lane);
            kept += prev[0];
        }
#pragma unroll
        for (int j = 0; j < G; ++j) {
            dt = fmaf(dt, 0.99991f, 1e-5f);
            du = fmaf(du, -0.9999f, 0.001f);
#pragma unroll
            for (int s = 0; s < S; ++s) {
                const float x = dt * a[s];
                const float e = (POLY > 0 && (j * S + s) % POLY == POLY - 1) ? ex2_poly(x) : ex2_mufu(x);
                if (EX2_ONLY) {
                    y[j] += e;
                } else {
                    h[s] = fmaf(e, h[s], du * b[s]);
                    y[j] = fmaf(c[s], h[s], y[j]);
                }
            }
        }
        if (SUM == Sum::kAfterBlock) {
            reduce_scatter<G, G>(y, lane);
            kept += y[0];  // this lane's step of the block, summed over the channel's states
        }
        if (REDUCE) {
#pragma unroll
            for (int j = 0; j < G; ++j) {
                if (OVERLAP) prev[j] = y[j];
                y[j] = 0.f;
            }
        }
    }
    float sum = kept;
#pragma unroll
    for (int j = 0; j < G; ++j) sum += y[j] + prev[j];
    out[tid] = sum;  // keeps the work alive
}

// Four floats from shared memory; volatile, so that the loads of data no one
// rewrites stay in the state loop as a kernel's loads of staged data would.
__device__ __forceinline__ void load4(float* v, unsigned shared_address) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(shared_address));
}

// Lanes along time: a warp owns CH channels of one batch row and walks the
// sequence in tiles of L * K steps, L = 32 / CH lanes per channel, each lane K
// consecutive steps of a tile; per tile and state n:
//   pass 1: a_j = 2^(dt_j A_n), b_j = du_j B_jn, h = a_j h + b_j from h = 0,
//           kept a_j and b_j; the lane's K-step decay P = 2^(sum dt A_n);
//   scan:   the tile's carry folded into the first lane (whose P becomes 0, so
//           a lane with a complete prefix holds P = 0 and needs no mask), then
//           an inclusive scan of the lanes' affine maps (P, h) by shuffles;
//   pass 2: h from the previous lane's end state, h = a_j h + b_j, y_j += C_jn h.
// Every exponential once, no sum of y across lanes. B and C come from registers
// (one value per state: the arithmetic alone), or from shared memory laid out
// [state][lane][K + 4] (16-byte loads, conflict-free), as a kernel must have
// them: lanes along time share no B or C, except the CH = 2 lanes of one step,
// which read the same address (a broadcast). dt and du change by one FFMA per
// step and lane each tile, standing in for their delivery.
template <int CH, int K, bool SMEM>
__global__ void __launch_bounds__(kTimeThreads, 2) time_lanes(float* out, int tiles) {
    constexpr int L = 32 / CH, KP = K + 4;
    extern __shared__ float4 staged[];  // B then C: [16 states][L lanes][KP]
    const int lane = threadIdx.x & 31, seg = lane % L;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (SMEM) {
        float* f = reinterpret_cast<float*>(staged);
        for (int i = threadIdx.x; i < 2 * 16 * L * KP; i += blockDim.x) f[i] = 0.3f + 1e-3f * (i % 37);
        __syncthreads();
    }
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(staged)) + 4u * seg * KP;
    const float a0 = -(0.05f + 0.001f * (tid % 97)) * 1.4426950408889634f;
    float dt[K], du[K], y[K] = {};
#pragma unroll
    for (int j = 0; j < K; ++j) {
        dt[j] = 0.05f + 1e-7f * ((tid + j) % 1000);
        du[j] = 0.3f + 1e-3f * j;
    }
    float carry[16] = {}, kept = 0.f;
    for (int tile = 0; tile < tiles; ++tile) {
        float sdt = 0.f;
#pragma unroll
        for (int j = 0; j < K; ++j) {
            dt[j] = fmaf(dt[j], 0.99991f, 1e-5f);
            du[j] = fmaf(du[j], -0.9999f, 0.001f);
            sdt += dt[j];
        }
#pragma unroll
        for (int n = 0; n < 16; ++n) {
            const float an = a0 * (1.f + 0.0625f * n);
            float bv[K], cv[K];
            if (SMEM) {
#pragma unroll
                for (int j = 0; j < K; j += 4) load4(bv + j, base + 4u * (n * L * KP + j));
            } else {
#pragma unroll
                for (int j = 0; j < K; ++j) bv[j] = 0.3f + 0.01f * n;
            }
            float a[K], b[K], h = 0.f;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                a[j] = ex2_mufu(dt[j] * an);
                b[j] = du[j] * bv[j];
                h = fmaf(a[j], h, b[j]);
            }
            float p = ex2_mufu(sdt * an);
            const float start = carry[n];
            if (seg == 0) {
                h = fmaf(p, start, h);
                p = 0.f;
            }
#pragma unroll
            for (int o = 1; o < L; o *= 2) {
                const float hu = __shfl_up_sync(0xffffffffu, h, o, L), pu = __shfl_up_sync(0xffffffffu, p, o, L);
                h = fmaf(p, hu, h);
                p *= pu;
            }
            const float before = __shfl_up_sync(0xffffffffu, h, 1, L);
            carry[n] = __shfl_sync(0xffffffffu, h, L - 1, L);
            h = seg == 0 ? start : before;
            if (SMEM) {
#pragma unroll
                for (int j = 0; j < K; j += 4) load4(cv + j, base + 4u * ((16 + n) * L * KP + j));
            } else {
#pragma unroll
                for (int j = 0; j < K; ++j) cv[j] = 0.7f - 0.01f * n;
            }
#pragma unroll
            for (int j = 0; j < K; ++j) {
                h = fmaf(a[j], h, b[j]);
                y[j] = fmaf(cv[j], h, y[j]);
            }
        }
#pragma unroll
        for (int j = 0; j < K; ++j) {
            kept += y[j];
            y[j] = 0.f;
        }
    }
    out[tid] = kept;
}

struct Stats {
    float median, minimum, maximum;
};

// Medians of 30 launches after 3 warm-ups; launch(work) starts one kernel of
// work times the official size's updates.
template <class Launch>
Stats time_launches(Launch launch, int work) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> us;
    for (int r = 0; r < 33; ++r) {
        CHECK(cudaEventRecord(start));
        launch(work);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 3) us.push_back(ms * 1000.f);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us.front(), us.back()};
}

template <class Launch>
void report(const char* what, int warps, Launch launch) {
    const Stats one = time_launches(launch, 1), two = time_launches(launch, 2);
    std::printf("%-34s %5d warps | 1x %6.1f us (%6.1f .. %6.1f) | 2x %6.1f us (%6.1f .. %6.1f) | per 1x %6.1f us\n",
                what, warps, one.median, one.minimum, one.maximum, two.median, two.minimum, two.maximum,
                two.median - one.median);
}

// One launch of updates<...> over `warps` warps, each lane S states.
template <int POLY, bool EX2_ONLY, int S = 2, Sum SUM = Sum::kNone>
auto lanes_along_states(float* out, int warps) {
    return [=](int work) {
        const long long threads = 32LL * warps;
        const int steps = static_cast<int>(work * kUpdates / (threads * S));
        updates<POLY, EX2_ONLY, S, SUM><<<static_cast<int>(threads / kThreads), kThreads>>>(out, steps);
    };
}

// One launch of time_lanes<...>: a warp per CH of the 2048 (batch, channel) pairs.
template <int CH, int K, bool SMEM>
auto lanes_along_time(float* out) {
    constexpr int kChannels = 4 * 512, warps = kChannels / CH, smem = SMEM ? 2 * 16 * (32 / CH) * (K + 4) * 4 : 0;
    CHECK(cudaFuncSetAttribute(time_lanes<CH, K, SMEM>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return [=](int work) {
        const int tiles = static_cast<int>(work * kUpdates / (32LL * warps * K * 16));
        time_lanes<CH, K, SMEM><<<32 * warps / kTimeThreads, kTimeThreads, smem>>>(out, tiles);
    };
}

}  // namespace

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int khz = 0;
    CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    std::printf("%s, %d SMs, SM clock up to %d MHz; %lld state updates (1x); medians of 30 launches (min .. max)\n",
                prop.name, prop.multiProcessorCount, khz / 1000, kUpdates);
    float* out;
    CHECK(cudaMalloc(&out, sizeof(float) * 32 * kMaxWarps));
    const Stats empty = time_launches(lanes_along_states<0, true>(out, 4096), 0);
    std::printf("%-34s %5d warps | %6.1f us (%6.1f .. %6.1f)\n", "empty launch", 4096, empty.median, empty.minimum,
                empty.maximum);
    report("x and 2^x only (MUFU)", 4096, lanes_along_states<0, true>(out, 4096));
    report("update, every 2^x on MUFU", 4096, lanes_along_states<0, false>(out, 4096));
    report("update, 1 in 16 by polynomial", 4096, lanes_along_states<16, false>(out, 4096));
    report("update, 1 in 8 by polynomial", 4096, lanes_along_states<8, false>(out, 4096));
    report("update, 1 in 4 by polynomial", 4096, lanes_along_states<4, false>(out, 4096));
    report("update, every 2^x by polynomial", 4096, lanes_along_states<1, false>(out, 4096));
    // the reference's shape: 32768 recurrences, 2 states per lane = 512 warps, one per scheduler
    report("update, every 2^x on MUFU", 512, lanes_along_states<0, false>(out, 512));
    report("update, 1 in 16 by polynomial", 512, lanes_along_states<16, false>(out, 512));
    report("update, every 2^x on MUFU", 1024, lanes_along_states<0, false>(out, 1024));
    // every single-pass shape with the sum of y over a channel's lanes (32768 recurrences)
    report("update, 1 state a lane", 1024, lanes_along_states<0, false, 1, Sum::kNone>(out, 1024));
    report("+ y over 8 lanes, after each block", 512, lanes_along_states<0, false, 2, Sum::kAfterBlock>(out, 512));
    report("+ y over 8 lanes, overlapped", 512, lanes_along_states<0, false, 2, Sum::kOverlapped>(out, 512));
    report("+ y over 8 lanes, no selects", 512, lanes_along_states<0, false, 2, Sum::kOverlappedNoSelect>(out, 512));
    report("+ y over 16 lanes, after each block", 1024, lanes_along_states<0, false, 1, Sum::kAfterBlock>(out, 1024));
    report("+ y over 16 lanes, overlapped", 1024, lanes_along_states<0, false, 1, Sum::kOverlapped>(out, 1024));
    report("+ y over 16 lanes, no selects", 1024, lanes_along_states<0, false, 1, Sum::kOverlappedNoSelect>(out, 1024));
    report("update, 4 states a lane", 256, lanes_along_states<0, false, 4, Sum::kNone>(out, 256));
    report("+ y over 4 lanes, overlapped", 256, lanes_along_states<0, false, 4, Sum::kOverlapped>(out, 256));
    // lanes along time: a warp per channel (2048) or per two channels (1024), K steps a lane
    report("time lanes, B C in registers", 2048, lanes_along_time<1, 16, false>(out));
    report("time lanes, B C from shared", 2048, lanes_along_time<1, 16, true>(out));
    report("time lanes, B C from shared, K 8", 2048, lanes_along_time<1, 8, true>(out));
    report("time lanes x2 ch, B C in registers", 1024, lanes_along_time<2, 16, false>(out));
    report("time lanes x2 ch, B C from shared", 1024, lanes_along_time<2, 16, true>(out));
    report("time lanes x2 ch, shared, K 8", 1024, lanes_along_time<2, 8, true>(out));
    CHECK(cudaFree(out));
    return 0;
}
