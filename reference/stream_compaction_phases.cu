// Where a block of reference/stream_compaction.cu spends its life on the GPU:
// the reference kernel, unchanged, with a %globaltimer stamp taken by thread 0
// of every block at its PHASE(k) marks (reference/phase_stamps.cuh), at the
// official size N = 2^25 with half the elements kept at random. Prints the
// kernel's median time over 25 calls (L2 flushed before each), a
// device-to-device copy of the same bytes, and per phase the mean, median and
// 90th percentile over the blocks of one call.
//
//   nvcc -O3 -arch=sm_90 reference/stream_compaction_phases.cu -o /tmp/phases && /tmp/phases
#include "phase_stamps.cuh"
#include "stream_compaction.cu"

int main() {
    const int N = 1 << 25, tiles = (N + TILE - 1) / TILE;
    std::vector<float> host(N);
    for (int i = 0; i < N; ++i) {
        const unsigned h = (unsigned)i * 2654435761u;
        host[i] = (h >> 31) ? 1.0f + (float)(h % 1000u) : -1.0f;  // kept with probability 1/2
    }
    float *in, *out;
    int* count;
    cudaMalloc(&in, N * sizeof(float)), cudaMalloc(&out, N * sizeof(float)), cudaMalloc(&count, sizeof(int));
    cudaMemcpy(in, host.data(), N * sizeof(float), cudaMemcpyHostToDevice);
    const unsigned long long* log = phase_log_for(tiles);

    const float kernel = median_us([&] { solve(in, out, count, N); });
    const float copy = median_us([&] { cudaMemcpyAsync(out, in, N * sizeof(float), cudaMemcpyDeviceToDevice); });
    flush_l2();
    solve(in, out, count, N);  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::vector<float> result(N);
    int kept = 0;
    cudaMemcpy(result.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(&kept, count, sizeof(int), cudaMemcpyDeviceToHost);
    long long expected = 0, wrong = 0;
    for (int i = 0; i < N; ++i)
        if (host[i] > 0.0f) wrong += result[expected++] != host[i];
    for (long long i = expected; i < N; ++i) wrong += result[i] != 0.0f;
    std::printf("kernel median %.1f us, copy of the same bytes %.1f us (%.2fx), count %d of %lld expected, "
                "%lld wrong slots\n",
                kernel, copy, kernel / copy, kept, expected, wrong);
    print_phases(log, tiles, {"loaded, counted per warp", "count out, ranks, staged", "look-back (warp 0)",
                              "stores issued"});
    return 0;
}
