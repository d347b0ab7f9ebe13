// Correct and unusual: two dependent kernels (state part, then the skip term added in place)
// and no synchronisation anywhere; default-stream order is the only guarantee. Must pass.
#include <cuda_runtime.h>

__global__ void state_part(const float* u, const float* delta, const float* A, const float* B, const float* C,
                           float* y, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
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
        y[row * d_model + d] = acc;
    }
}

__global__ void add_skip(const float* u, const float* skip, float* y, size_t total, int d_model) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) y[i] += skip[i % d_model] * u[i];
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int threads = 128;
    state_part<<<(batch * d_model + threads - 1) / threads, threads>>>(u, delta, A, B, C, y, batch, seq_len, d_model, d_state);
    size_t total = (size_t)batch * seq_len * d_model;
    add_skip<<<(unsigned)((total + 255) / 256), 256>>>(u, skip, y, total, d_model);
}
