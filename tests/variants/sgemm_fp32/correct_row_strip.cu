// expect: pass
// Independent correct design: 16x64 tiles of C, each thread 4 consecutive columns, A and B slices of 16 in shared memory, k accumulated with plain multiply-add.
#include <cuda_runtime.h>

__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float as[16][16], bs[16][64];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // 16 x 16 threads
    int m = blockIdx.y * 16 + ty, nb = blockIdx.x * 64;
    float acc[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
        as[ty][tx] = (m < M && k0 + tx < K) ? A[(size_t)m * K + k0 + tx] : 0.0f;
        for (int j = 0; j < 4; ++j) {
            int n = nb + tx * 4 + j;
            bs[ty][tx * 4 + j] = (k0 + ty < K && n < N) ? B[(size_t)(k0 + ty) * N + n] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            for (int j = 0; j < 4; ++j) acc[j] += as[ty][k] * bs[k][tx * 4 + j];
        __syncthreads();
    }
    for (int j = 0; j < 4; ++j) {
        int n = nb + tx * 4 + j;
        if (m < M && n < N) C[(size_t)m * N + n] = acc[j];
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 grid((N + 63) / 64, (M + 15) / 16);
    mm<<<grid, 256>>>(A, B, C, M, N, K);
}
