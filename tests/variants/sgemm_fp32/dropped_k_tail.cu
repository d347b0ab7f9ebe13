// expect: wrong_output
// 32x32 shared-memory tiles that walk only whole 32-deep slices of K: the last K % 32 terms of every dot product are dropped.
#include <cuda_runtime.h>

__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float as[32][32], bs[32][33];
    int tx = threadIdx.x, ty = threadIdx.y, m = blockIdx.y * 32 + ty, n = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 + 32 <= K; k0 += 32) {
        as[ty][tx] = m < M ? A[(size_t)m * K + k0 + tx] : 0.0f;
        bs[ty][tx] = n < N ? B[(size_t)(k0 + ty) * N + n] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 32; ++k) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (m < M && n < N) C[(size_t)m * N + n] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    mm<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32)>>>(A, B, C, M, N, K);
}
