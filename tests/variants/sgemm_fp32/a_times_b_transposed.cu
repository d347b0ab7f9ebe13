// expect: wrong_output
// Reads B as if it were stored (N, K), i.e. computes A x B^T of the buffer: the classic layout mix-up (only in bounds where it happens to be).
#include <cuda_runtime.h>

__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        size_t idx = (size_t)n * K + k;  // should be k * N + n
        acc += A[(size_t)m * K + k] * B[idx % ((size_t)K * N)];
    }
    C[(size_t)m * N + n] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    mm<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
