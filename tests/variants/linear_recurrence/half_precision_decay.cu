// expect: wrong_output
// Keeps the decays in half precision: a = 1 - 5e-4 rounds to a multiple of 2^-11 (4.9e-4), so long memories decay at the wrong rate.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void rec(const float* a, const float* x, float* h, int batch, int seq_len) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    size_t row = (size_t)b * seq_len;
    float s = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        s = __half2float(__float2half(a[row + t])) * s + x[row + t];
        h[row + t] = s;
    }
}

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    rec<<<(batch + 63) / 64, 64>>>(a, x, h, batch, seq_len);
}
