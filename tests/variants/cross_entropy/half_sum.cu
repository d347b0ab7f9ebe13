// expect: wrong_output
// The sum of exp(x - max) accumulated in half: past a sum of a few the small terms round away (half keeps 11 bits), so wide rows come out far too small.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    if (labels[r] == -100) {
        loss[r] = 0.0f;
        return;
    }
    const half* x = logits + (size_t)r * vocab;
    half m = x[0];
    for (int c = 1; c < vocab; ++c) m = __hmax(m, x[c]);
    half s = __float2half(0.0f);
    for (int c = 0; c < vocab; ++c) s = __hadd(s, __float2half(expf(__half2float(x[c]) - __half2float(m))));
    loss[r] = (__half2float(m) - __half2float(x[labels[r]])) + logf(__half2float(s));
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<(rows + 127) / 128, 128>>>(logits, labels, loss, rows, vocab);
}
