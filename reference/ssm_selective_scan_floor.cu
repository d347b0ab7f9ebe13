// The arithmetic floor of ssm_selective_scan on the GPU at hand: the per-state
// work of the recurrence with every operand already in registers (no loads, no
// sum over states, no stores), for the official size's 4*4096*512*16 = 134.2 M
// state updates. A real kernel does all of this plus its data movement, so no
// kernel of the same arithmetic can be faster than the best line printed here.
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

// Two states per lane, as the reference kernel holds them. POLY k > 0: every
// k-th exponential of a lane is the polynomial. EX2_ONLY: only x and 2^x,
// summed (the MUFU throughput).
template <int POLY, bool EX2_ONLY>
__global__ void __launch_bounds__(kThreads) updates(float* out, int steps) {
    constexpr int S = 2;
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
    float y[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int i = 0; i < steps; i += 8) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
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
    }
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) sum += y[j];
    out[tid] = sum;  // keeps the work alive
}

struct Stats {
    float median, minimum, maximum;
};

template <int POLY, bool EX2_ONLY>
Stats time_launches(float* out, int warps, int work) {
    const long long threads = 32LL * warps;
    const int steps = static_cast<int>(work * kUpdates / (threads * 2));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> us;
    for (int r = 0; r < 33; ++r) {
        CHECK(cudaEventRecord(start));
        updates<POLY, EX2_ONLY><<<static_cast<int>(threads / kThreads), kThreads>>>(out, steps);
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

template <int POLY, bool EX2_ONLY>
void report(const char* what, float* out, int warps) {
    const Stats one = time_launches<POLY, EX2_ONLY>(out, warps, 1);
    const Stats two = time_launches<POLY, EX2_ONLY>(out, warps, 2);
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
    CHECK(cudaFree(out));
    return 0;
}
