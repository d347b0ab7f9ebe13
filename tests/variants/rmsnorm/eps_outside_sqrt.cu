// expect: wrong_output
// x / (sqrt(mean(x^2)) + eps): zero rows come out right, but rows whose mean square is near eps are scaled up to ~10x too much.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void rms_rows(const half* x, const half* w, half* y, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const half* row = x + (size_t)r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += __half2float(row[c]) * __half2float(row[c]);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    float scale = 1.0f / (sqrtf(s / cols) + 1e-6f);
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = __float2half(__half2float(row[c]) * scale * __half2float(w[c]));
}

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    rms_rows<<<(rows + 3) / 4, 128>>>(input, weight, output, rows, cols);
}
