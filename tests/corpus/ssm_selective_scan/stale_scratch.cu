// Scratch accumulated across calls: chains atomicAdd into a static buffer that is zeroed
// only when (re)allocated, so every call after the first adds to stale sums. Must be `wrong_output`.
#include <cuda_runtime.h>

__global__ void chains(const float* u, const float* delta, const float* A, const float* B, const float* C,
                       const float* skip, float* sums, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= batch * d_model * d_state) return;
    int n = index % d_state, d = (index / d_state) % d_model, b = index / (d_state * d_model);
    float a = A[d * d_state + n], h = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d];
        h = expf(dt * a) * h + dt * B[row * d_state + n] * x;
        float term = C[row * d_state + n] * h + (n == 0 ? skip[d] * x : 0.0f);
        atomicAdd(&sums[row * d_model + d], term);
    }
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    static float* sums = nullptr;
    static size_t capacity = 0;
    size_t bytes = (size_t)batch * seq_len * d_model * sizeof(float);
    if (bytes > capacity) {  // the bug: zeroed here only, not on every call
        cudaFree(sums);
        cudaMalloc(&sums, bytes);
        cudaMemset(sums, 0, bytes);
        capacity = bytes;
    }
    int total = batch * d_model * d_state, threads = 128;
    chains<<<(total + threads - 1) / threads, threads>>>(u, delta, A, B, C, skip, sums, batch, seq_len, d_model, d_state);
    cudaMemcpy(y, sums, bytes, cudaMemcpyDeviceToDevice);
}
