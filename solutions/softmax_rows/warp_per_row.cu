// One warp per row: lane l reads columns l, l + 32, ..., so every load of a
// warp is one coalesced 128-byte line, and the row's maximum and sum are
// combined across lanes with shuffles (no shared memory, no __syncthreads).
// Still three passes over global memory (the second and third re-read the row,
// from L2 when it is short enough); reference/softmax_rows.cu reads it once.
#include <cuda_runtime.h>

constexpr int WARPS_PER_BLOCK = 8;

__device__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void softmax_warp_per_row(const float* input, float* output, int rows, int cols) {
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;  // the whole warp leaves: the shuffles below see all 32 lanes
    const float* x = input + (size_t)r * cols;
    float* y = output + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += __expf(x[c] - m);
    float inv = 1.0f / warp_sum(s);
    for (int c = lane; c < cols; c += 32) y[c] = __expf(x[c] - m) * inv;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    softmax_warp_per_row<<<blocks, WARPS_PER_BLOCK * 32>>>(input, output, rows, cols);
}
