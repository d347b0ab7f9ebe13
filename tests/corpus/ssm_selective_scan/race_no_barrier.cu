// A race: thread 0 stages the block's skip weights in shared memory and nobody
// waits for it (no __syncthreads). Must be judged `race` on emu; a GPU's schedule decides.
#include <cuda_runtime.h>

__global__ void scan(const float* u, const float* delta, const float* A, const float* B, const float* C,
                     const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    __shared__ float staged_skip[128];
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        for (int i = 0; i < blockDim.x && blockIdx.x * blockDim.x + i < batch * d_model; ++i)
            staged_skip[i] = skip[(blockIdx.x * blockDim.x + i) % d_model];
    }
    if (index >= batch * d_model) return;
    int b = index / d_model, d = index % d_model;
    float h[64];
    for (int n = 0; n < d_state; ++n) h[n] = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d], acc = 0.0f;
        for (int n = 0; n < d_state; ++n) {
            h[n] = expf(dt * A[d * d_state + n]) * h[n] + dt * B[row * d_state + n] * x;
            acc += C[row * d_state + n] * h[n];
        }
        y[row * d_model + d] = acc + staged_skip[threadIdx.x] * x;
    }
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int threads = 128, blocks = (batch * d_model + threads - 1) / threads;
    scan<<<blocks, threads>>>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
