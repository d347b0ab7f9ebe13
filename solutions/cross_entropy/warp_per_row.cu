// One warp per row: the lanes read neighbouring logits (coalesced), two at a
// time as half2, and combine their float32 partials with shuffles, no shared
// memory and no barrier. Two passes over the row: the maximum, then the sum of
// exp(x - max); the second read hits in L2 only while the rows in flight fit
// there. A row starts 4-byte aligned only when r * vocab is even, so an odd
// first element and an odd last one are read on their own.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

constexpr int WARPS_PER_BLOCK = 8;
constexpr int IGNORE_INDEX = -100;

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void cross_entropy_warp_per_row(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;  // the whole warp leaves together
    int label = labels[r];
    if (label == IGNORE_INDEX) {
        if (lane == 0) loss[r] = 0.0f;
        return;
    }
    const half* x = logits + (size_t)r * vocab;
    int head = (uintptr_t)x % 4 != 0;  // one half before the first 4-byte boundary
    int pairs = (vocab - head) / 2;
    bool tail = (vocab - head) % 2 != 0;  // one half after the last pair
    const half2* x2 = reinterpret_cast<const half2*>(x + head);

    float m = -INFINITY;
    if (lane == 0 && head) m = __half2float(x[0]);
    if (lane == 0 && tail) m = fmaxf(m, __half2float(x[vocab - 1]));
    for (int i = lane; i < pairs; i += 32) {
        float2 v = __half22float2(x2[i]);
        m = fmaxf(m, fmaxf(v.x, v.y));
    }
    m = warp_max(m);

    float s = 0.0f;
    if (lane == 0 && head) s += expf(__half2float(x[0]) - m);
    if (lane == 0 && tail) s += expf(__half2float(x[vocab - 1]) - m);
    for (int i = lane; i < pairs; i += 32) {
        float2 v = __half22float2(x2[i]);
        s += expf(v.x - m) + expf(v.y - m);
    }
    s = warp_sum(s);
    if (lane == 0) loss[r] = (m - __half2float(x[label])) + logf(s);
}

extern "C" void solve(const half* logits, const int* labels, float* loss, int rows, int vocab) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    cross_entropy_warp_per_row<<<blocks, WARPS_PER_BLOCK * 32>>>(logits, labels, loss, rows, vocab);
}
