// Shared by the phase probes in reference/ (prefix_sum_phases.cu,
// stream_compaction_phases.cu, linear_recurrence_phases.cu,
// mamba3_scan_backward_phases.cu, mamba3_scan_phases.cu) and the bounds drivers
// (mamba3_scan_bounds.cu, mamba3_scan_backward_bounds.cu): defines PHASE(k)
// and PHASE_AT(k, t), which the look-back references call at the points
// between their phases and which are empty in their normal builds, as a
// %globaltimer stamp (ns) in slot k of every block, taken by thread 0 or by
// thread t (the thread that ends a phase), and PHASE_VALUE(k, v), a value in
// slot k; and the probes' timing and printing.
// The phase probes include it before the reference; the bounds drivers after it, their
// PHASE_AT undefined first, so that the reference's marks stay empty.
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

// v in slot k of this block, from thread t
#define PHASE_STORE(k, t, v)                                                                       \
    do {                                                                                           \
        if (threadIdx.x == (t)) phase_log[(unsigned long long)PHASE_SLOTS * blockIdx.x + (k)] = (v); \
    } while (0)
#define PHASE_AT(k, t) PHASE_STORE(k, t, global_ns())
#define PHASE(k) PHASE_AT(k, 0)
#define PHASE_VALUE(k, v) PHASE_STORE(k, 0, v)  // a ticket, a count

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

// Microseconds of `calls` runs of `run` (after 3 not counted), the L2 flushed before each, sorted.
template <class F>
std::vector<float> call_times_us(F run, int calls) {
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
    return us;
}

// Median microseconds of `calls` runs of `run`, the L2 flushed before each.
template <class F>
float median_us(F run, int calls = 25) {
    const std::vector<float> us = call_times_us(run, calls);
    return us[us.size() / 2];
}

// One line for the bounds drivers (reference/mamba3_scan_bounds.py reads it): `name`, then the
// median, first and third quartile of 80 calls in us, and the count; 1 after a CUDA error.
template <class F>
int print_call_times(const char* name, F run) {
    const std::vector<float> us = call_times_us(run, 80);
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("%s: CUDA error\n", name), 1;
    std::printf("%s %.2f %.2f %.2f %zu\n", name, us[us.size() / 2], us[us.size() / 4], us[us.size() * 3 / 4],
                us.size());
    return 0;
}

// Zeroes the stamps of `blocks` blocks: a block that leaves a phase out (an
// early return) keeps a zero there, and print_phases skips it for that phase.
inline void clear_phases(unsigned long long* log, long long blocks) {
    cudaMemset(log, 0, (size_t)blocks * PHASE_SLOTS * sizeof(unsigned long long));
}

// One line: the mean, median and 90th percentile over those of the `blocks` blocks in `stamps`
// (PHASE_SLOTS per block) that took both stamp `from` and stamp `to`, of the time between them.
inline void print_span(const std::vector<unsigned long long>& stamps, long long blocks, const char* name, int from,
                       int to) {
    std::vector<float> us;
    double sum = 0.0;
    for (long long b = 0; b < blocks; ++b) {
        const unsigned long long* s = &stamps[(size_t)b * PHASE_SLOTS];
        if (!s[from] || !s[to]) continue;
        const float v = (float)(long long)(s[to] - s[from]) / 1000.0f;
        us.push_back(v), sum += v;
    }
    if (us.empty()) return;
    std::sort(us.begin(), us.end());
    std::printf("%-34s mean %6.2f us  median %6.2f  p90 %6.2f  (%zu blocks)\n", name, sum / us.size(),
                us[us.size() / 2], us[us.size() * 9 / 10], us.size());
}

// The stamps of `blocks` blocks, from the device.
inline std::vector<unsigned long long> read_stamps(const unsigned long long* log, long long blocks) {
    std::vector<unsigned long long> stamps((size_t)blocks * PHASE_SLOTS);
    cudaMemcpy(stamps.data(), log, stamps.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    return stamps;
}

// Per phase (stamp first + k to stamp first + k + 1; the last row: the first stamp to the last),
// print_span's line.
inline void print_phases(const unsigned long long* log, long long blocks, const std::vector<const char*>& names,
                         int first = 0) {
    const std::vector<unsigned long long> stamps = read_stamps(log, blocks);
    const int phases = (int)names.size();
    for (int p = 0; p < phases; ++p) print_span(stamps, blocks, names[p], first + p, first + p + 1);
    print_span(stamps, blocks, "whole life", first, first + phases);
}

// The summed lives (stamp first to stamp last) of the blocks that took both stamps, per SM, in us:
// at one block per SM at a time, near the kernel's time; at k blocks per SM, about k times it.
inline double life_per_sm(const unsigned long long* log, long long blocks, int first, int last) {
    const std::vector<unsigned long long> s = read_stamps(log, blocks);
    double sum = 0.0;
    for (long long b = 0; b < blocks; ++b) {
        const unsigned long long from = s[(size_t)b * PHASE_SLOTS + first], to = s[(size_t)b * PHASE_SLOTS + last];
        if (from && to) sum += (double)(long long)(to - from) / 1000.0;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    return sum / sms;
}

// n deterministic floats spread over [lo, hi), on the device (the probes' inputs).
inline float* filled_on_device(size_t n, float lo, float hi, unsigned seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        const unsigned h = ((unsigned)i + seed * 0x9e3779b9u) * 2654435761u;
        v[i] = lo + (hi - lo) * (float)(h >> 8) / 16777216.0f;
    }
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemcpy(d, v.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    return d;
}

// The forward inputs of mamba3_scan (and of its backward) at sizes (batch, T, H, P, N), in the
// challenge's ranges (dt > 0, A < 0, lam in [0, 1]), for the phase probes and the bounds drivers.
struct Mamba3Inputs {
    float *x, *B, *C, *dt, *A, *lam, *theta, *skip;
};
inline Mamba3Inputs mamba3_inputs(int batch, int T, int H, int P, int N) {
    const size_t rows = (size_t)batch * T * H;
    return {filled_on_device(rows * P, -1.f, 1.f, 1),    filled_on_device(rows * N, -1.f, 1.f, 2),
            filled_on_device(rows * N, -1.f, 1.f, 3),    filled_on_device(rows, 0.001f, 0.1f, 4),
            filled_on_device(H, -4.f, -0.5f, 5),         filled_on_device(rows, 0.f, 1.f, 6),
            filled_on_device(rows * N / 2, -0.5f, 0.5f, 7), filled_on_device(H, -1.f, 1.f, 8)};
}
// The backward's dy (seed 9) and its gradients (zeroed), at the same sizes.
struct Mamba3Gradients {
    float *dy, *dx, *dB, *dC, *ddt, *dA, *dlam, *dtheta, *dskip;
};
inline Mamba3Gradients mamba3_gradients(int batch, int T, int H, int P, int N) {
    const size_t rows = (size_t)batch * T * H;
    return {filled_on_device(rows * P, -1.f, 1.f, 9),     filled_on_device(rows * P, 0.f, 0.f, 0),
            filled_on_device(rows * N, 0.f, 0.f, 0),      filled_on_device(rows * N, 0.f, 0.f, 0),
            filled_on_device(rows, 0.f, 0.f, 0),          filled_on_device(H, 0.f, 0.f, 0),
            filled_on_device(rows, 0.f, 0.f, 0),          filled_on_device(rows * N / 2, 0.f, 0.f, 0),
            filled_on_device(H, 0.f, 0.f, 0)};
}
