// expect: wrong_output
// exp of the raw logits: overflows to inf above 88.7 and underflows every element to 0 (0/0) below -103.
#include <cuda_runtime.h>

__global__ void row_softmax(const float* in, float* out, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* x = in + (size_t)r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += expf(x[c]);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int c = lane; c < cols; c += 32) out[(size_t)r * cols + c] = expf(x[c]) / s;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    row_softmax<<<(rows + 3) / 4, 128>>>(input, output, rows, cols);
}
