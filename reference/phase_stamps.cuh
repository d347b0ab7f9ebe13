// Shared by the phase probes in reference/ (prefix_sum_phases.cu,
// stream_compaction_phases.cu, linear_recurrence_phases.cu,
// mamba3_scan_backward_phases.cu): defines PHASE(k) and PHASE_AT(k, t), which
// the look-back references call at the points between their phases and which
// are empty in their normal builds, as a %globaltimer stamp (ns) in slot k of
// every block, taken by thread 0 or by thread t (the thread that ends a
// phase); and the probes' timing and printing.
// Include it before the reference.
#pragma once

#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

constexpr int PHASE_SLOTS = 16;  // stamps per block
__device__ unsigned long long* phase_log;

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
    return v;
}

#define PHASE_AT(k, t)                                                                                   \
    do {                                                                                                 \
        if (threadIdx.x == (t)) phase_log[(unsigned long long)PHASE_SLOTS * blockIdx.x + (k)] = global_ns(); \
    } while (0)
#define PHASE(k) PHASE_AT(k, 0)

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

// Zeroes the stamps of `blocks` blocks: a block that leaves a phase out (an
// early return) keeps a zero there, and print_phases skips it for that phase.
inline void clear_phases(unsigned long long* log, long long blocks) {
    cudaMemset(log, 0, (size_t)blocks * PHASE_SLOTS * sizeof(unsigned long long));
}

// Per phase (stamp first + k to stamp first + k + 1; the last row: the first
// stamp to the last) the mean, median and 90th percentile over those of the
// `blocks` blocks in `log` that took both stamps.
inline void print_phases(const unsigned long long* log, long long blocks, const std::vector<const char*>& names,
                         int first = 0) {
    std::vector<unsigned long long> stamps((size_t)blocks * PHASE_SLOTS);
    cudaMemcpy(stamps.data(), log, stamps.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    const int phases = (int)names.size();
    for (int p = 0; p <= phases; ++p) {
        std::vector<float> us;
        double sum = 0.0;
        for (long long b = 0; b < blocks; ++b) {
            const unsigned long long* s = &stamps[(size_t)b * PHASE_SLOTS + first];
            const unsigned long long from = p < phases ? s[p] : s[0], to = p < phases ? s[p + 1] : s[phases];
            if (!from || !to) continue;
            const float v = (float)(long long)(to - from) / 1000.0f;
            us.push_back(v), sum += v;
        }
        if (us.empty()) continue;
        std::sort(us.begin(), us.end());
        std::printf("%-34s mean %6.2f us  median %6.2f  p90 %6.2f  (%zu blocks)\n", p < phases ? names[p] : "whole life",
                    sum / us.size(), us[us.size() / 2], us[us.size() * 9 / 10], us.size());
    }
}
