// Where a block of reference/prefix_sum.cu spends its life on the GPU: the
// reference kernel, unchanged, with a %globaltimer stamp taken by thread 0 of
// every block at its PHASE(k) marks (reference/phase_stamps.cuh), at the
// official size N = 2^25. Prints the kernel's median time over 25 calls (L2
// flushed before each), a device-to-device copy of the same bytes, and per
// phase the mean, median and 90th percentile over the blocks of one call.
//
//   nvcc -O3 -arch=sm_90 reference/prefix_sum_phases.cu -o /tmp/phases && /tmp/phases
#include <cmath>

#include "phase_stamps.cuh"
#include "prefix_sum.cu"

int main() {
    const int N = 1 << 25, tiles = (N + TILE - 1) / TILE;
    std::vector<float> host(N);
    for (int i = 0; i < N; ++i) host[i] = (float)((i * 2654435761u) % 1000u) / 1000.0f - 0.5f;
    float *in, *out;
    cudaMalloc(&in, N * sizeof(float)), cudaMalloc(&out, N * sizeof(float));
    cudaMemcpy(in, host.data(), N * sizeof(float), cudaMemcpyHostToDevice);
    const unsigned long long* log = phase_log_for(tiles);

    const float kernel = median_us([&] { solve(in, out, N); });
    const float copy = median_us([&] { cudaMemcpyAsync(out, in, N * sizeof(float), cudaMemcpyDeviceToDevice); });
    flush_l2();
    solve(in, out, N);  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::vector<float> result(N);
    cudaMemcpy(result.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost);
    double running = 0.0, worst = 0.0;
    for (int i = 0; i < N; ++i) running += host[i], worst = std::max(worst, std::fabs(running - result[i]));
    std::printf("kernel median %.1f us, copy of the same bytes %.1f us (%.2fx), largest error %.3g\n", kernel, copy,
                kernel / copy, worst);
    print_phases(log, tiles, {"tile index", "copies landed", "sums scanned, aggregate out", "look-back (warp 0)",
                              "stores issued"});
    return 0;
}
