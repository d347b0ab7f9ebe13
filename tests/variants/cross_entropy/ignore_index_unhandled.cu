// expect: wrong_output
// No ignore_index: a row labelled -100 gets a loss against x[r*vocab - 100], a logit of the previous row (before the array for row 0), instead of 0.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const half* x = logits + (size_t)r * vocab;
    float m = -INFINITY;
    for (int c = lane; c < vocab; c += 32) m = fmaxf(m, __half2float(x[c]));
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int c = lane; c < vocab; c += 32) s += expf(__half2float(x[c]) - m);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) loss[r] = (m - __half2float(x[labels[r]])) + logf(s);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<(rows + 3) / 4, 128>>>(logits, labels, loss, rows, vocab);
}
