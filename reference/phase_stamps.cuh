// Shared by the phase probes in reference/ (prefix_sum_phases.cu,
// stream_compaction_phases.cu, linear_recurrence_phases.cu): defines PHASE(k),
// which the look-back references call at the points between their phases and
// which is empty in their normal builds, as a %globaltimer stamp (ns) taken
// by thread 0 of every block; and the probes' timing and printing.
// Include it before the reference.
#pragma once

#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

constexpr int PHASE_SLOTS = 8;  // stamps per block
__device__ unsigned long long* phase_log;

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
    return v;
}

#define PHASE(k)                                                                                         \
    do {                                                                                                 \
        if (threadIdx.x == 0) phase_log[(unsigned long long)PHASE_SLOTS * blockIdx.x + (k)] = global_ns(); \
    } while (0)

// Device memory for `blocks` blocks' stamps, made the kernels' phase_log.
inline unsigned long long* phase_log_for(long long blocks) {
    unsigned long long* log = nullptr;
    cudaMalloc(&log, (size_t)blocks * PHASE_SLOTS * sizeof(unsigned long long));
    cudaMemcpyToSymbol(phase_log, &log, sizeof log);
    return log;
}

// Rewrites a 256 MB buffer (5x the 50 MB L2 of an H100 or H200): the next
// kernel starts with its data out of L2.
inline void flush_l2() {
    static char* flush = nullptr;
    const size_t flush_bytes = 256u << 20;
    if (!flush) cudaMalloc(&flush, flush_bytes);
    static int round = 0;
    cudaMemsetAsync(flush, ++round & 255, flush_bytes);
}

// Median microseconds of `calls` runs of `run`, the L2 flushed before each.
template <class F>
float median_us(F run, int calls = 25) {
    cudaEvent_t start, end;
    cudaEventCreate(&start), cudaEventCreate(&end);
    std::vector<float> us;
    for (int i = 0; i < calls + 3; ++i) {
        flush_l2();
        cudaEventRecord(start);
        run();
        cudaEventRecord(end);
        cudaEventSynchronize(end);
        float ms;
        cudaEventElapsedTime(&ms, start, end);
        if (i >= 3) us.push_back(ms * 1000.0f);
    }
    cudaEventDestroy(start), cudaEventDestroy(end);
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

// Per phase (stamp k to stamp k + 1; the last row: stamp 0 to the last stamp)
// the mean, median and 90th percentile over the `blocks` blocks in `log`.
inline void print_phases(const unsigned long long* log, long long blocks, const std::vector<const char*>& names) {
    std::vector<unsigned long long> stamps((size_t)blocks * PHASE_SLOTS);
    cudaMemcpy(stamps.data(), log, stamps.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    const int phases = (int)names.size();
    for (int p = 0; p <= phases; ++p) {
        std::vector<float> us;
        double sum = 0.0;
        for (long long b = 0; b < blocks; ++b) {
            const unsigned long long* s = &stamps[(size_t)b * PHASE_SLOTS];
            const float v = (p < phases ? (float)(s[p + 1] - s[p]) : (float)(s[phases] - s[0])) / 1000.0f;
            us.push_back(v), sum += v;
        }
        std::sort(us.begin(), us.end());
        std::printf("%-30s mean %6.2f us  median %6.2f  p90 %6.2f\n", p < phases ? names[p] : "whole life", sum / blocks,
                    us[us.size() / 2], us[us.size() * 9 / 10]);
    }
}
