// Passes, yet reads memory nobody wrote: the scan prefetches the next step's delta*u from a
// padded scratch buffer, one step past the staged part on the last step, and discards it.
// The value never reaches y, so the tests pass; only --sanitize (initcheck) sees the read.
#include <cuda_runtime.h>

__global__ void stage(const float* u, const float* delta, float* dtu, size_t total) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) dtu[i] = delta[i] * u[i];
}

__global__ void scan(const float* u, const float* delta, const float* dtu, const float* A, const float* B,
                     const float* C, const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= batch * d_model) return;
    int b = index / d_model, d = index % d_model;
    float h[64];
    for (int n = 0; n < d_state; ++n) h[n] = 0.0f;
    size_t first = (size_t)b * seq_len * d_model + d;
    float x = dtu[first];
    for (int t = 0; t < seq_len; ++t) {
        size_t i = ((size_t)b * seq_len + t) * d_model + d, row = (size_t)b * seq_len + t;
        float next = dtu[i + d_model];  // on the last step of the last batch row: the unwritten padding
        float dt = delta[i], acc = 0.0f;
        for (int n = 0; n < d_state; ++n) {
            h[n] = expf(dt * A[d * d_state + n]) * h[n] + B[row * d_state + n] * x;
            acc += C[row * d_state + n] * h[n];
        }
        y[i] = acc + skip[d] * u[i];
        x = next;
    }
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    size_t total = (size_t)batch * seq_len * d_model;
    float* dtu = nullptr;
    cudaMalloc(&dtu, (total + d_model) * sizeof(float));  // one step of padding, never written
    stage<<<(unsigned)((total + 255) / 256), 256>>>(u, delta, dtu, total);
    int threads = 128;
    scan<<<(batch * d_model + threads - 1) / threads, threads>>>(u, delta, dtu, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    cudaFree(dtu);
}
