// One warp per row: the 32 lanes read 32 consecutive floats of the row at a time
// (one 128-byte transaction per load instead of 32), each lane keeps a partial
// sum, and five shuffles add the 32 partials. Coalesced, but a warp has only one
// load in flight per lane, every warp re-reads x, and with few rows (M = 1: a
// single warp for the whole matrix) most of the GPU sits idle.
#include <cuda_runtime.h>

constexpr int WARPS_PER_BLOCK = 8;

__global__ void gemv_warp_per_row(const float* A, const float* x, float* y, int M, int N) {
    int lane = threadIdx.x % 32;
    int i = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (i >= M) return;  // the whole warp leaves together: the shuffles below see all 32 lanes
    const float* row = A + (size_t)i * N;
    float sum = 0.0f;
    for (int j = lane; j < N; j += 32) sum += row[j] * x[j];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[i] = sum;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int blocks = (M + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    gemv_warp_per_row<<<blocks, WARPS_PER_BLOCK * 32>>>(A, x, y, M, N);
}
