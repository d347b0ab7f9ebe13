// ssm_selective_scan, correct: tests/corpus/ssm_selective_scan/correct_sequential.cu
// with its state in device scratch owned by a std::unique_ptr, as host code
// written against the C++ standard library does. tests/test_emu_std_headers.py
// puts an #include of every standard header nvcc accepts above this line.
#include <cuda_runtime.h>
#include <memory>

__device__ __noinline__ float decay(float dt, float a) { return expf(dt * a); }

__global__ void scan(const float* u, const float* delta, const float* A, const float* B, const float* C,
                     const float* skip, float* y, float* state, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= batch * d_model) return;
    int b = index / d_model, d = index % d_model;
    float* h = state + (size_t)index * d_state;
    for (int n = 0; n < d_state; ++n) h[n] = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d], acc = 0.0f;
        for (int n = 0; n < d_state; ++n) {
            h[n] = decay(dt, A[d * d_state + n]) * h[n] + dt * B[row * d_state + n] * x;
            acc += C[row * d_state + n] * h[n];
        }
        y[row * d_model + d] = acc + skip[d] * x;
    }
}

struct DeviceFree {
    void operator()(float* p) const { cudaFree(p); }
};

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    float* raw = nullptr;
    cudaMalloc(&raw, sizeof(float) * (size_t)batch * d_model * d_state);
    std::unique_ptr<float, DeviceFree> state(raw);
    int threads = 128, blocks = (batch * d_model + threads - 1) / threads;
    scan<<<blocks, threads>>>(u, delta, A, B, C, skip, y, state.get(), batch, seq_len, d_model, d_state);
    cudaDeviceSynchronize();  // the scratch is freed on return
}
