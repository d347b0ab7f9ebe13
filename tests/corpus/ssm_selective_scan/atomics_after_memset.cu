// Correct and unusual: one thread per (b, d, n) chain, y zeroed with cudaMemset on every
// call and the chains' C*h terms summed into it with atomicAdd. Must pass.
#include <cuda_runtime.h>

__global__ void chains(const float* u, const float* delta, const float* A, const float* B, const float* C,
                       const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= batch * d_model * d_state) return;
    int n = index % d_state, d = (index / d_state) % d_model, b = index / (d_state * d_model);
    float a = A[d * d_state + n], h = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d];
        h = expf(dt * a) * h + dt * B[row * d_state + n] * x;
        float term = C[row * d_state + n] * h + (n == 0 ? skip[d] * x : 0.0f);
        atomicAdd(&y[row * d_model + d], term);
    }
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    cudaMemset(y, 0, (size_t)batch * seq_len * d_model * sizeof(float));
    int total = batch * d_model * d_state, threads = 128;
    chains<<<(total + threads - 1) / threads, threads>>>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
