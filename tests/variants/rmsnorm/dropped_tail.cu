// expect: unwritten_output
// Eight halves at a time and no remainder loop: the last cols % 8 elements of every row are never read or written.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void rms_rows(const half* x, const half* w, half* y, int rows, int cols) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    int full = cols / 8 * 8;
    const half* row = x + (size_t)r * cols;
    float s = 0.0f;
    for (int c = 8 * lane; c < full; c += 256)
        for (int k = 0; k < 8; ++k) s += __half2float(row[c + k]) * __half2float(row[c + k]);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    float scale = rsqrtf(s / cols + 1e-6f);
    for (int c = 8 * lane; c < full; c += 256)
        for (int k = 0; k < 8; ++k)
            y[(size_t)r * cols + c + k] = __float2half(__half2float(row[c + k]) * scale * __half2float(w[c + k]));
}

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    rms_rows<<<(rows + 3) / 4, 128>>>(input, weight, output, rows, cols);
}
