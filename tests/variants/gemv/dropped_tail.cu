// expect: wrong_output
// A warp per row, each lane taking 4 consecutive columns per step: the last N % 4 columns of every row are never added (and rows shorter than 4 sum to 0).
#include <cuda_runtime.h>

__global__ void gemv_by_fours(const float* A, const float* x, float* y, int M, int N) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (i >= M) return;
    const float* row = A + (long long)i * N;
    float t = 0.0f;
    for (int j = 4 * lane; j + 3 < N; j += 128)
        t += row[j] * x[j] + row[j + 1] * x[j + 1] + row[j + 2] * x[j + 2] + row[j + 3] * x[j + 3];
    for (int o = 16; o > 0; o /= 2) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (lane == 0) y[i] = t;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    gemv_by_fours<<<(M + 7) / 8, 256>>>(A, x, y, M, N);
}
