// expect: pass
// Independent correct design: one block of 64 threads per row, one pass with a running max and a rescaled sum per thread, a shared-memory tree combining the pairs, and the loss as lse - x[label] (the order spec.md's tolerance accepts, not the careful one).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define THREADS 64

__global__ void xent_rows(const half* logits, const int* labels, float* loss, int vocab) {
    __shared__ float tree_m[THREADS], tree_s[THREADS];
    const half* x = logits + (size_t)blockIdx.x * vocab;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < vocab; c += THREADS) {
        float v = __half2float(x[c]);
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    tree_m[threadIdx.x] = m;
    tree_s[threadIdx.x] = s;
    __syncthreads();
    for (int width = THREADS / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) {
            float m1 = tree_m[threadIdx.x], m2 = tree_m[threadIdx.x + width];
            float both = fmaxf(m1, m2);
            if (both != -INFINITY) {  // a thread that saw no logit holds (-inf, 0)
                tree_s[threadIdx.x] = tree_s[threadIdx.x] * expf(m1 - both) + tree_s[threadIdx.x + width] * expf(m2 - both);
                tree_m[threadIdx.x] = both;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int label = labels[blockIdx.x];
        float lse = tree_m[0] + logf(tree_s[0]);
        loss[blockIdx.x] = label == -100 ? 0.0f : lse - __half2float(x[label]);
    }
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    xent_rows<<<rows, THREADS>>>(logits, labels, loss, vocab);
}
