// The arithmetic floor of ssm_selective_scan on the GPU at hand: the per-state
// work of the recurrence with every operand already in registers (no loads, no
// stores), for the official size's 4*4096*512*16 = 134.2 M state updates. The
// first lines leave out the sum of y over a channel's states too; the last ones
// add it in each way a single pass can lay out its 32768 recurrences (S states
// per lane, the sum across 16 / S lanes). A real kernel does all of this plus
// its data movement, so no kernel of the same arithmetic and layout can be
// faster than the line printed here for it.
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

struct Stats {
    float median, minimum, maximum;
};

template <int POLY, bool EX2_ONLY, int S = 2, Sum SUM = Sum::kNone>
Stats time_launches(float* out, int warps, int work) {
    const long long threads = 32LL * warps;
    const int steps = static_cast<int>(work * kUpdates / (threads * S));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> us;
    for (int r = 0; r < 33; ++r) {
        CHECK(cudaEventRecord(start));
        updates<POLY, EX2_ONLY, S, SUM><<<static_cast<int>(threads / kThreads), kThreads>>>(out, steps);
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

template <int POLY, bool EX2_ONLY, int S = 2, Sum SUM = Sum::kNone>
void report(const char* what, float* out, int warps) {
    const Stats one = time_launches<POLY, EX2_ONLY, S, SUM>(out, warps, 1);
    const Stats two = time_launches<POLY, EX2_ONLY, S, SUM>(out, warps, 2);
    std::printf("%-34s %5d warps | 1x %6.1f us (%6.1f .. %6.1f) | 2x %6.1f us (%6.1f .. %6.1f) | per 1x %6.1f us\n",
                what, warps, one.median, one.minimum, one.maximum, two.median, two.minimum, two.maximum,
                two.median - one.median);
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
    const Stats empty = time_launches<0, true>(out, 4096, 0);
    std::printf("%-34s %5d warps | %6.1f us (%6.1f .. %6.1f)\n", "empty launch", 4096, empty.median, empty.minimum,
                empty.maximum);
    report<0, true>("x and 2^x only (MUFU)", out, 4096);
    report<0, false>("update, every 2^x on MUFU", out, 4096);
    report<16, false>("update, 1 in 16 by polynomial", out, 4096);
    report<8, false>("update, 1 in 8 by polynomial", out, 4096);
    report<4, false>("update, 1 in 4 by polynomial", out, 4096);
    report<1, false>("update, every 2^x by polynomial", out, 4096);
    // the reference's shape: 32768 recurrences, 2 states per lane = 512 warps, one per scheduler
    report<0, false>("update, every 2^x on MUFU", out, 512);
    report<16, false>("update, 1 in 16 by polynomial", out, 512);
    report<0, false>("update, every 2^x on MUFU", out, 1024);
    // every single-pass shape with the sum of y over a channel's lanes (32768 recurrences)
    report<0, false, 1, Sum::kNone>("update, 1 state a lane", out, 1024);
    report<0, false, 2, Sum::kAfterBlock>("+ y over 8 lanes, after each block", out, 512);
    report<0, false, 2, Sum::kOverlapped>("+ y over 8 lanes, overlapped", out, 512);
    report<0, false, 2, Sum::kOverlappedNoSelect>("+ y over 8 lanes, no selects", out, 512);
    report<0, false, 1, Sum::kAfterBlock>("+ y over 16 lanes, after each block", out, 1024);
    report<0, false, 1, Sum::kOverlapped>("+ y over 16 lanes, overlapped", out, 1024);
    report<0, false, 1, Sum::kOverlappedNoSelect>("+ y over 16 lanes, no selects", out, 1024);
    report<0, false, 4, Sum::kNone>("update, 4 states a lane", out, 256);
    report<0, false, 4, Sum::kOverlapped>("+ y over 4 lanes, overlapped", out, 256);
    CHECK(cudaFree(out));
    return 0;
}
