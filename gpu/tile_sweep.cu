// Standalone timing of a reference at its official size, for comparing the
// tile configurations of reference/hgemm.cu and reference/attention_fwd.cu
// built with -D overrides (gpu/tensor-challenges.sh). Random half inputs,
// CUDA events, L2 flushed before every call, median of 15 calls. Prints the
// median time and TFLOP/s (the challenge's flop count).
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>
#include REFERENCE

static half* random_halves(size_t n) {
    std::vector<half> host(n);
    for (size_t i = 0; i < n; i++) host[i] = __float2half((float)rand() / RAND_MAX * 2.0f - 1.0f);
    half* dev;
    cudaMalloc(&dev, n * sizeof(half));
    cudaMemcpy(dev, host.data(), n * sizeof(half), cudaMemcpyHostToDevice);
    return dev;
}

int main() {
    void* flush;
    size_t flush_bytes = 256u << 20;
    cudaMalloc(&flush, flush_bytes);
#ifdef SWEEP_HGEMM
    const int n = 4096;
    half *A = random_halves((size_t)n * n), *B = random_halves((size_t)n * n);
    float* C;
    cudaMalloc(&C, (size_t)n * n * sizeof(float));
    auto call = [&] { solve(A, B, C, n, n, n); };
    double flops = 2.0 * n * n * n;
#else
    const int b = 4, h = 16, s = 4096, d = 128;
    size_t elems = (size_t)b * h * s * d;
    half *Q = random_halves(elems), *K = random_halves(elems), *V = random_halves(elems), *O;
    cudaMalloc(&O, elems * sizeof(half));
    auto call = [&] { solve(Q, K, V, O, b, h, s, d); };
    double flops = 2.0 * b * h * (double)s * (s + 1) * d;
#endif
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    call();  // warm-up
    std::vector<float> ms;
    for (int i = 0; i < 15; i++) {
        cudaMemset(flush, i, flush_bytes);
        cudaEventRecord(start);
        call();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float t;
        cudaEventElapsedTime(&t, start, stop);
        ms.push_back(t);
    }
    cudaError_t err = cudaDeviceSynchronize();
    std::sort(ms.begin(), ms.end());
    printf("median %.1f us  %.0f TFLOP/s  %s\n", ms[ms.size() / 2] * 1e3, flops / (ms[ms.size() / 2] * 1e-3) / 1e12,
           err == cudaSuccess ? "ok" : cudaGetErrorString(err));
    return 0;
}
