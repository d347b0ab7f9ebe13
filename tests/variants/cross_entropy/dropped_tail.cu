// expect: wrong_output
// Eight logits at a time and no remainder loop: the last vocab % 8 logits of every row are left out of the max and the sum (a row narrower than 8 gives log(0)).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    int full = vocab / 8 * 8;
    const half* x = logits + (size_t)r * vocab;
    float m = -INFINITY;
    for (int c = 8 * lane; c < full; c += 256)
        for (int k = 0; k < 8; ++k) m = fmaxf(m, __half2float(x[c + k]));
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int c = 8 * lane; c < full; c += 256)
        for (int k = 0; k < 8; ++k) s += expf(__half2float(x[c + k]) - m);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) loss[r] = labels[r] == -100 ? 0.0f : (m - __half2float(x[labels[r]])) + logf(s);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<(rows + 3) / 4, 128>>>(logits, labels, loss, rows, vocab);
}
