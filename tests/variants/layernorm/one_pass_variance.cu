// expect: wrong_output
// var = E[x^2] - E[x]^2 in one pass: on rows whose mean is hundreds of standard deviations from zero the two terms agree to 4-5 digits and float32 cancels them into noise (or a negative variance).
#include <cuda_runtime.h>

__global__ void ln_rows(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    float s = 0.0f, s2 = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        s += row[c];
        s2 += row[c] * row[c];
    }
    for (int o = 16; o > 0; o /= 2) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        s2 += __shfl_xor_sync(0xffffffffu, s2, o);
    }
    float mean = s / cols, var = s2 / cols - mean * mean;
    float inv = rsqrtf(var + 1e-5f);
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = (row[c] - mean) * inv * gamma[c] + beta[c];
}

extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {
    ln_rows<<<(rows + 3) / 4, 128>>>(input, gamma, beta, output, rows, cols);
}
