// One warp per row: the lanes read neighbouring elements (coalesced) and
// combine their float32 partial sums with shuffles, no shared memory and no
// barrier. Two-pass statistics: the mean first, then the sum of squared
// deviations from it, which cannot cancel. The row is read three times (mean,
// variance, normalise); the re-reads hit in L2 only while the rows in flight
// fit there.
#include <cuda_runtime.h>

constexpr int WARPS_PER_BLOCK = 8;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void layernorm_warp_per_row(const float* input, const float* gamma, const float* beta, float* output,
                                       int rows, int cols) {
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;  // the whole warp leaves together
    const float* x = input + (size_t)r * cols;
    float* y = output + (size_t)r * cols;
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32) sum += x[c];
    const float mean = warp_sum(sum) / cols;
    float sum_sq = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float d = x[c] - mean;
        sum_sq += d * d;
    }
    const float inv_std = rsqrtf(warp_sum(sum_sq) / cols + 1e-5f);
    for (int c = lane; c < cols; c += 32) y[c] = (x[c] - mean) * inv_std * gamma[c] + beta[c];
}

extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    layernorm_warp_per_row<<<blocks, WARPS_PER_BLOCK * 32>>>(input, gamma, beta, output, rows, cols);
}
