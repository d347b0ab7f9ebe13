// expect: pass
// Independent correct design: 128 threads per row, shared-memory tree reductions, expf, three passes over the row.
#include <cuda_runtime.h>

#define THREADS 128

__global__ void row_softmax(const float* in, float* out, int cols) {
    __shared__ float red[THREADS];
    const float* x = in + (size_t)blockIdx.x * cols;
    float* y = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, x[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + half]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += expf(x[c] - m);
    red[threadIdx.x] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) red[threadIdx.x] += red[threadIdx.x + half];
        __syncthreads();
    }
    s = red[0];
    for (int c = threadIdx.x; c < cols; c += THREADS) y[c] = expf(x[c] - m) / s;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    row_softmax<<<rows, THREADS>>>(input, output, cols);
}
