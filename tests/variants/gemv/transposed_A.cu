// expect: wrong_output
// Reads A as if it were column-major (A[j*M + i]): computes A^T x on the same memory, in bounds but the wrong product whenever A is not symmetric.
#include <cuda_runtime.h>

__global__ void gemv_cols(const float* A, const float* x, float* y, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;
    float t = 0.0f;
    for (int j = 0; j < N; ++j) t += A[(long long)j * M + i] * x[j];
    y[i] = t;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    gemv_cols<<<(M + 127) / 128, 128>>>(A, x, y, M, N);
}
