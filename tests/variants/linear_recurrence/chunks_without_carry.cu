// expect: wrong_output
// Splits each row into 256-step chunks scanned in parallel from h = 0, and never carries the state from one chunk into the next.
#include <cuda_runtime.h>

__global__ void rec(const float* a, const float* x, float* h, int batch, int seq_len, int chunks) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= batch * chunks) return;
    int b = c / chunks, start = (c % chunks) * 256, end = min(start + 256, seq_len);
    size_t row = (size_t)b * seq_len;
    float s = 0.0f;
    for (int t = start; t < end; ++t) { s = a[row + t] * s + x[row + t]; h[row + t] = s; }
}

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    int chunks = (seq_len + 255) / 256;
    rec<<<(batch * chunks + 127) / 128, 128>>>(a, x, h, batch, seq_len, chunks);
}
