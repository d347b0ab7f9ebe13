// expect: unwritten_output
// Each thread handles 4 columns with a float4; the last cols % 4 columns of a row are never read or written.
#include <cuda_runtime.h>

__global__ void row_softmax(const float* in, float* out, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* x = in + (size_t)r * cols;
    float* y = out + (size_t)r * cols;
    int full = cols / 4 * 4;
    float m = -INFINITY;
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) m = fmaxf(m, x[c + k]);
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) s += expf(x[c + k] - m);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int c = 4 * lane; c < full; c += 128)
        for (int k = 0; k < 4; ++k) y[c + k] = expf(x[c + k] - m) / s;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    row_softmax<<<(rows + 3) / 4, 128>>>(input, output, rows, cols);
}
