// expect: wrong_output
// Exponentials in half precision (hexp): each carries ~5e-4 relative error, five times the tolerance's rtol.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void row_softmax(const float* in, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* x = in + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += __half2float(hexp(__float2half(x[c] - m)));
    for (int c = 0; c < cols; ++c) out[(size_t)r * cols + c] = __half2float(hexp(__float2half(x[c] - m))) / s;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    row_softmax<<<(rows + 127) / 128, 128>>>(input, output, rows, cols);
}
