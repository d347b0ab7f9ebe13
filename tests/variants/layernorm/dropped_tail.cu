// expect: unwritten_output
// Four floats at a time and no remainder loop: the last cols % 4 elements of every row are left out of the statistics and never written.
#include <cuda_runtime.h>

__global__ void ln_rows(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    int full = cols / 4 * 4;
    float s = 0.0f;
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) s += row[c + k];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    float mean = s / cols, q = 0.0f;
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) q += (row[c + k] - mean) * (row[c + k] - mean);
    for (int o = 16; o > 0; o /= 2) q += __shfl_xor_sync(0xffffffffu, q, o);
    float inv = rsqrtf(q / cols + 1e-5f);
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) y[(size_t)r * cols + c + k] = (row[c + k] - mean) * inv * gamma[c + k] + beta[c + k];
}

extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {
    ln_rows<<<(rows + 3) / 4, 128>>>(input, gamma, beta, output, rows, cols);
}
