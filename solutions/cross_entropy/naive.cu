// The obvious first attempt: one thread per row, three walks over the row (the
// maximum, the sum of exp(x - max) in float32, then the label's logit). Correct,
// but every thread walks its own row, so a warp's 32 loads land in 32 different
// rows, and one thread adding a whole row in order is the least accurate sum
// the tolerance accepts (spec.md, "Tolerance").
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void cross_entropy_thread_per_row(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int label = labels[r];
    if (label == -100) {  // ignore_index
        loss[r] = 0.0f;
        return;
    }
    const half* x = logits + (size_t)r * vocab;
    float m = -INFINITY;
    for (int c = 0; c < vocab; ++c) m = fmaxf(m, __half2float(x[c]));
    float s = 0.0f;
    for (int c = 0; c < vocab; ++c) s += expf(__half2float(x[c]) - m);
    loss[r] = (m - __half2float(x[label])) + logf(s);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int threads = 128;
    cross_entropy_thread_per_row<<<(rows + threads - 1) / threads, threads>>>(logits, labels, loss, rows, vocab);
}
