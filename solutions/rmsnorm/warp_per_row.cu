// One warp per row: the lanes read neighbouring elements (coalesced), two at a
// time as half2 when the row allows it, and add their float32 partial sums of
// squares with shuffles, no shared memory and no barrier. The row is read
// twice (sum of squares, then normalise); the second read hits in L2 only
// while the rows in flight fit there.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int WARPS_PER_BLOCK = 8;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <bool PAIRS>
__global__ void rmsnorm_warp_per_row(const half* input, const half* weight, half* output, int rows, int cols) {
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;  // the whole warp leaves together
    const half* x = input + (size_t)r * cols;
    half* y = output + (size_t)r * cols;
    float sum_sq = 0.0f;
    if (PAIRS) {
        const half2* x2 = reinterpret_cast<const half2*>(x);
        for (int c = lane; c < cols / 2; c += 32) {
            float2 v = __half22float2(x2[c]);
            sum_sq += v.x * v.x + v.y * v.y;
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            float v = __half2float(x[c]);
            sum_sq += v * v;
        }
    }
    float inv_rms = rsqrtf(warp_sum(sum_sq) / cols + 1e-6f);
    if (PAIRS) {
        const half2* x2 = reinterpret_cast<const half2*>(x);
        const half2* w2 = reinterpret_cast<const half2*>(weight);
        half2* y2 = reinterpret_cast<half2*>(y);
        for (int c = lane; c < cols / 2; c += 32) {
            float2 v = __half22float2(x2[c]), w = __half22float2(w2[c]);
            y2[c] = __floats2half2_rn(v.x * inv_rms * w.x, v.y * inv_rms * w.y);
        }
    } else {
        for (int c = lane; c < cols; c += 32) y[c] = __float2half(__half2float(x[c]) * inv_rms * __half2float(weight[c]));
    }
}

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    // half2 needs every row and the weight 4-byte aligned: an even width and aligned pointers
    bool pairs = cols % 2 == 0 && ((uintptr_t)input | (uintptr_t)weight | (uintptr_t)output) % 4 == 0;
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    if (pairs) rmsnorm_warp_per_row<true><<<blocks, WARPS_PER_BLOCK * 32>>>(input, weight, output, rows, cols);
    else rmsnorm_warp_per_row<false><<<blocks, WARPS_PER_BLOCK * 32>>>(input, weight, output, rows, cols);
}
