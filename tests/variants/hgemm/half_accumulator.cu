// expect: wrong_output
// Accumulates the dot product in half (__hfma): the running sum keeps 11 bits, so every product below half an ulp of the sum is lost once the sum grows.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void hgemm_half_sum(const half* A, const half* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    half sum = __float2half(0.0f);
    for (int k = 0; k < K; k++) sum = __hfma(A[(size_t)m * K + k], B[(size_t)k * N + n], sum);
    C[(size_t)m * N + n] = __half2float(sum);
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    hgemm_half_sum<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
