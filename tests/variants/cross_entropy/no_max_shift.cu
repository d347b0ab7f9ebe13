// expect: wrong_output
// log(sum of exp(x)) of the raw logits: exp overflows to inf above 88.7 and every term underflows to 0 below -103.9, so large logits give inf or -inf.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const half* x = logits + (size_t)r * vocab;
    float s = 0.0f;
    for (int c = lane; c < vocab; c += 32) s += expf(__half2float(x[c]));
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) loss[r] = labels[r] == -100 ? 0.0f : logf(s) - __half2float(x[labels[r]]);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<(rows + 3) / 4, 128>>>(logits, labels, loss, rows, vocab);
}
