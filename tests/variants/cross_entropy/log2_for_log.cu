// expect: wrong_output
// exp2f of x * log2(e) for the sum, as fast kernels do, but then log2f of the sum without the factor ln 2 back: log(sum) comes out 1.44 times too large.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float log2e = 1.4426950408889634f;
    const half* x = logits + (size_t)r * vocab;
    float m = -INFINITY;
    for (int c = lane; c < vocab; c += 32) m = fmaxf(m, __half2float(x[c]));
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int c = lane; c < vocab; c += 32) s += exp2f((__half2float(x[c]) - m) * log2e);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) loss[r] = labels[r] == -100 ? 0.0f : (m - __half2float(x[labels[r]])) + log2f(s);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<(rows + 3) / 4, 128>>>(logits, labels, loss, rows, vocab);
}
