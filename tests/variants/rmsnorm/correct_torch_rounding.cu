// expect: pass
// Independent correct design with PyTorch's rounding: 32 threads per row, a shared-memory tree, the normalised value rounded to half before a half multiply by the weight (two roundings).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define THREADS 32

__global__ void rms_rows(const half* x, const half* w, half* y, int cols) {
    __shared__ float tree[THREADS];
    const half* row = x + (size_t)blockIdx.x * cols;
    half* out = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += __half2float(row[c]) * __half2float(row[c]);
    tree[threadIdx.x] = s;
    __syncthreads();
    for (int half_width = THREADS / 2; half_width > 0; half_width /= 2) {
        if (threadIdx.x < half_width) tree[threadIdx.x] += tree[threadIdx.x + half_width];
        __syncthreads();
    }
    float scale = 1.0f / sqrtf(tree[0] / (float)cols + 1e-6f);
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        half normalised = __float2half(__half2float(row[c]) * scale);
        out[c] = __hmul(normalised, w[c]);
    }
}

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    rms_rows<<<rows, THREADS>>>(input, weight, output, cols);
}
