// expect: wrong_output
// Converts A and B to bfloat16 before multiplying (float32 sums): bfloat16 keeps 8 significant bits to half's 11, so every product carries up to ~0.8% error.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void hgemm_bf16(const half* A, const half* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    float sum = 0.0f;
    for (int k = 0; k < K; k++) {
        float a = __bfloat162float(__float2bfloat16(__half2float(A[(size_t)m * K + k])));
        float b = __bfloat162float(__float2bfloat16(__half2float(B[(size_t)k * N + n])));
        sum += a * b;
    }
    C[(size_t)m * N + n] = sum;
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    hgemm_bf16<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
