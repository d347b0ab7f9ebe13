// Where a block of reference/linear_recurrence.cu spends its life on the GPU:
// the reference kernel, unchanged, with a %globaltimer stamp taken by thread 0
// of every block at its PHASE(k) marks (reference/phase_stamps.cuh), at the
// official size (16 rows of 2^20 steps) with decays in [0.999, 1) (long
// memory). Prints the kernel's median time over 25 calls (L2 flushed before
// each), a device-to-device copy of the same bytes, and per phase the mean,
// median and 90th percentile over the blocks of one call.
//
//   nvcc -O3 -arch=sm_90 reference/linear_recurrence_phases.cu -o /tmp/phases && /tmp/phases
#include <cmath>

#include "phase_stamps.cuh"
#include "linear_recurrence.cu"

int main() {
    const int batch = 16, seq_len = 1 << 20;
    const size_t n = (size_t)batch * seq_len;
    const long long tiles = (long long)batch * ((seq_len + TILE - 1) / TILE);
    std::vector<float> a(n), x(n);
    for (size_t i = 0; i < n; ++i) {
        const unsigned h = (unsigned)i * 2654435761u;
        a[i] = 0.999f + 0.001f * (float)(h % 1000u) / 1000.0f;
        x[i] = (float)((h >> 10) % 1000u) / 1000.0f - 0.5f;
    }
    float *da, *dx, *dh;
    cudaMalloc(&da, n * sizeof(float)), cudaMalloc(&dx, n * sizeof(float)), cudaMalloc(&dh, n * sizeof(float));
    cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    const unsigned long long* log = phase_log_for(tiles);

    const float kernel = median_us([&] { solve(da, dx, dh, batch, seq_len); });
    // the same bytes (a and x read, h written: 12 n) as one copy of 6 n bytes
    char *from, *to;
    cudaMalloc(&from, 6 * n), cudaMalloc(&to, 6 * n);
    const float copy = median_us([&] { cudaMemcpyAsync(to, from, 6 * n, cudaMemcpyDeviceToDevice); });
    flush_l2();
    solve(da, dx, dh, batch, seq_len);  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::vector<float> h(n);
    cudaMemcpy(h.data(), dh, n * sizeof(float), cudaMemcpyDeviceToHost);
    double worst = 0.0;
    for (int b = 0; b < batch; ++b) {
        double state = 0.0;
        for (int t = 0; t < seq_len; ++t) {
            const size_t i = (size_t)b * seq_len + t;
            state = (double)a[i] * state + x[i];
            worst = std::max(worst, std::fabs(state - h[i]));
        }
    }
    std::printf("kernel median %.1f us, copy of the same bytes %.1f us (%.2fx), largest error %.3g\n", kernel, copy,
                kernel / copy, worst);
    print_phases(log, tiles, {"copies landed", "map out, maps per step", "look-back (warp 0)", "h stored"});
    return 0;
}
