// expect: wrong_output
// Walks K in whole slices of 16 only: the last K % 16 products of every dot product are dropped (right whenever K is a multiple of 16).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void hgemm_k_slices(const half* A, const half* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    float sum = 0.0f;
    for (int k0 = 0; k0 + 16 <= K; k0 += 16)
        for (int k = k0; k < k0 + 16; k++) sum += __half2float(A[(size_t)m * K + k]) * __half2float(B[(size_t)k * N + n]);
    C[(size_t)m * N + n] = sum;
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    hgemm_k_slices<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
