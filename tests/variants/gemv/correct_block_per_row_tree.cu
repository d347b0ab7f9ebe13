// expect: pass
// Independent correct design: one block of 128 threads per row, strided loop with mul then add, shared-memory tree; the grid is strided over rows so any M fits.
#include <cuda_runtime.h>

#define THREADS 128

__global__ void row_dot(const float* A, const float* x, float* y, int M, int N) {
    __shared__ float s[THREADS];
    for (int i = blockIdx.x; i < M; i += gridDim.x) {
        float t = 0.0f;
        for (int j = threadIdx.x; j < N; j += THREADS) {
            float p = A[(long long)i * N + j] * x[j];
            t = t + p;
        }
        s[threadIdx.x] = t;
        __syncthreads();
        for (int h = THREADS / 2; h > 0; h /= 2) {
            if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0) y[i] = s[0];
        __syncthreads();
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int blocks = M < 4096 ? M : 4096;
    row_dot<<<blocks, THREADS>>>(A, x, y, M, N);
}
