// Wrong on purpose: drops the state term, so y = skip * u only.
// Must be judged `wrong_output`, the worst element reported as (b, t, d).
#include <cuda_runtime.h>

__global__ void skip_only(const float* u, const float* skip, float* y, int rows, int d_model) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * d_model) y[i] = skip[i % d_model] * u[i];
}

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int total = batch * seq_len * d_model;
    skip_only<<<(total + 255) / 256, 256>>>(u, skip, y, batch * seq_len, d_model);
}
