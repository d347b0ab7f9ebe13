// expect: wrong_output
// The sample variance (divided by cols - 1) for the spec's biased one: a single-column row divides 0 by 0, and narrow rows are scaled by sqrt((cols - 1)/cols).
#include <cuda_runtime.h>

__global__ void ln_rows(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += row[c];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    float mean = s / cols, q = 0.0f;
    for (int c = lane; c < cols; c += 32) q += (row[c] - mean) * (row[c] - mean);
    for (int o = 16; o > 0; o /= 2) q += __shfl_xor_sync(0xffffffffu, q, o);
    float inv = rsqrtf(q / (cols - 1) + 1e-5f);
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = (row[c] - mean) * inv * gamma[c] + beta[c];
}

extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {
    ln_rows<<<(rows + 3) / 4, 128>>>(input, gamma, beta, output, rows, cols);
}
