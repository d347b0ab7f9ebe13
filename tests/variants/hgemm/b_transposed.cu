// expect: wrong_output
// Reads B as if it were stored N x K (B[n*K + k]), i.e. computes A B^T of the memory: the classic layout mix-up (it stays in bounds only by clamping, which is what makes it a wrong answer and not a crash).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void hgemm_bt(const half* A, const half* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    float sum = 0.0f;
    size_t last = (size_t)K * N - 1;
    for (int k = 0; k < K; k++) {
        size_t i = (size_t)n * K + k;
        sum += __half2float(A[(size_t)m * K + k]) * __half2float(B[i < last ? i : last]);
    }
    C[(size_t)m * N + n] = sum;
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    hgemm_bt<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
