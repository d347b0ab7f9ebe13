// Where a block of reference/prefix_sum.cu spends its life on the GPU: the
// reference kernel, unchanged, with a timestamp (%globaltimer, ns) taken by
// thread 0 of every block at the reference's PHASE(k) marks, at the official
// size N = 2^25. Prints the kernel's median time over 25 calls (L2 flushed
// before each), a device-to-device copy of the same bytes, and per phase the
// mean, median and 90th percentile over the 4096 blocks of one call.
//
//   nvcc -O3 -arch=sm_90 reference/prefix_sum_phases.cu -o /tmp/phases && /tmp/phases
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

__device__ unsigned long long* phase_log;  // 8 words per block

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
    return v;
}

#define PHASE(k)                                                                            \
    do {                                                                                    \
        if (threadIdx.x == 0) phase_log[8 * (unsigned long long)blockIdx.x + (k)] = global_ns(); \
    } while (0)

#include "prefix_sum.cu"

namespace {

float median_of(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Median microseconds of `calls` runs of `run`, the L2 flushed before each.
template <class F>
float time_us(F run, char* flush, size_t flush_bytes, int calls = 25) {
    cudaEvent_t start, end;
    cudaEventCreate(&start), cudaEventCreate(&end);
    std::vector<float> us;
    for (int i = 0; i < calls + 3; ++i) {
        cudaMemsetAsync(flush, i, flush_bytes);
        cudaEventRecord(start);
        run();
        cudaEventRecord(end);
        cudaEventSynchronize(end);
        float ms;
        cudaEventElapsedTime(&ms, start, end);
        if (i >= 3) us.push_back(ms * 1000.0f);
    }
    return median_of(us);
}

}  // namespace

int main() {
    const int N = 1 << 25, tiles = (N + TILE - 1) / TILE;
    std::vector<float> host(N);
    for (int i = 0; i < N; ++i) host[i] = (float)((i * 2654435761u) % 1000u) / 1000.0f - 0.5f;
    float *in, *out;
    char* flush;
    unsigned long long* log;
    const size_t flush_bytes = 256u << 20;  // 5x the 50 MB L2
    cudaMalloc(&in, N * sizeof(float)), cudaMalloc(&out, N * sizeof(float)), cudaMalloc(&flush, flush_bytes);
    cudaMalloc(&log, (size_t)tiles * 8 * sizeof(unsigned long long));
    cudaMemcpyToSymbol(phase_log, &log, sizeof log);
    cudaMemcpy(in, host.data(), N * sizeof(float), cudaMemcpyHostToDevice);

    const float kernel = time_us([&] { solve(in, out, N); }, flush, flush_bytes);
    const float copy = time_us([&] { cudaMemcpyAsync(out, in, N * sizeof(float), cudaMemcpyDeviceToDevice); }, flush,
                               flush_bytes);
    cudaMemsetAsync(flush, 0, flush_bytes);
    solve(in, out, N);  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::vector<float> result(N);
    cudaMemcpy(result.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost);
    double running = 0.0, worst = 0.0;
    for (int i = 0; i < N; ++i) running += host[i], worst = std::max(worst, std::abs(running - result[i]));

    std::vector<unsigned long long> stamps((size_t)tiles * 8);
    cudaMemcpy(stamps.data(), log, stamps.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    std::printf("kernel median %.1f us, copy of the same bytes %.1f us (%.2fx), largest error %.3g\n", kernel, copy,
                kernel / copy, worst);
    const char* names[] = {"tile index", "copies landed", "sums scanned, aggregate out", "look-back (warp 0)",
                           "stores issued", "whole life"};
    for (int p = 0; p < 6; ++p) {
        std::vector<float> us;
        double sum = 0.0;
        for (int b = 0; b < tiles; ++b) {
            const unsigned long long* s = &stamps[(size_t)b * 8];
            const float v = (p < 5 ? (float)(s[p + 1] - s[p]) : (float)(s[5] - s[0])) / 1000.0f;
            us.push_back(v), sum += v;
        }
        std::sort(us.begin(), us.end());
        std::printf("%-28s mean %6.2f us  median %6.2f  p90 %6.2f\n", names[p], sum / tiles, us[us.size() / 2],
                    us[us.size() * 9 / 10]);
    }
    return 0;
}
