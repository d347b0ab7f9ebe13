// expect: wrong_output
// Writes the state before step t (an exclusive scan) instead of after it.
#include <cuda_runtime.h>

__global__ void rec(const float* a, const float* x, float* h, int batch, int seq_len) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    size_t row = (size_t)b * seq_len;
    float s = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        h[row + t] = s;
        s = a[row + t] * s + x[row + t];
    }
}

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    rec<<<(batch + 63) / 64, 64>>>(a, x, h, batch, seq_len);
}
