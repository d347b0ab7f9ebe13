// expect: wrong_output
// The sum of squares accumulated in half: it overflows to inf for large rows (output 0), underflows for tiny ones, and stagnates past 2048 on normal ones.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void rms_rows(const half* x, const half* w, half* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const half* row = x + (size_t)r * cols;
    half s = __float2half(0.0f);
    for (int c = 0; c < cols; ++c) s = __hfma(row[c], row[c], s);
    float scale = rsqrtf(__half2float(s) / cols + 1e-6f);
    for (int c = 0; c < cols; ++c) y[(size_t)r * cols + c] = __float2half(__half2float(row[c]) * scale * __half2float(w[c]));
}

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    rms_rows<<<(rows + 127) / 128, 128>>>(input, weight, output, rows, cols);
}
