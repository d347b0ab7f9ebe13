// softmax_rows reference: each row read once and written once.
//
// Up to 32768 columns (8192 unaligned) a block holds its whole row in registers (ITEMS loads
// of float4, or of float when rows are not 16-byte aligned), so the input is
// read from DRAM exactly once: block max, exponentials kept in registers,
// block sum, scale, store. Rows of up to 512 units run one warp per block
// (reductions are shuffles only); wider ones 256 or 1024 threads. Wider rows
// than that cannot stay on chip: one block per row keeps a running (max, sum)
// pair ("online softmax") in one pass and writes in a second pass, reading the
// row twice (the second read mostly from L2).
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr unsigned FULL = 0xffffffffu;

template <bool VEC4>
struct Unit;  // what one thread loads at a time
template <>
struct Unit<true> {
    using type = float4;
    static constexpr int width = 4;
};
template <>
struct Unit<false> {
    using type = float;
    static constexpr int width = 1;
};

__device__ __forceinline__ float* lanes(float4& v) { return &v.x; }
__device__ __forceinline__ float* lanes(float& v) { return &v; }

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(FULL, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(FULL, v, offset);
    return v;
}

// Block-wide max or sum; `scratch` holds one float per warp and is reused only
// after the barrier that ends the previous use (the caller passes distinct
// arrays to back-to-back reductions).
template <int BLOCK, bool IS_MAX>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (BLOCK == 32) return v;
    constexpr int WARPS = BLOCK / 32;
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = IS_MAX ? -INFINITY : 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) v = IS_MAX ? fmaxf(v, scratch[w]) : v + scratch[w];
    return v;
}

template <int BLOCK, int ITEMS, bool VEC4>
__global__ __launch_bounds__(BLOCK) void softmax_row_in_registers(const float* __restrict__ input,
                                                                   float* __restrict__ output, int cols) {
    using T = typename Unit<VEC4>::type;
    constexpr int W = Unit<VEC4>::width;
    __shared__ float scratch_max[BLOCK / 32], scratch_sum[BLOCK / 32];
    const int units = cols / W;
    const T* x = reinterpret_cast<const T*>(input + (size_t)blockIdx.x * cols);
    T* y = reinterpret_cast<T*>(output + (size_t)blockIdx.x * cols);

    T v[ITEMS];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int u = i * BLOCK + threadIdx.x;
        if (u < units) {
            v[i] = __ldcs(x + u);  // streamed: read once, keep L2 for others
#pragma unroll
            for (int k = 0; k < W; ++k) m = fmaxf(m, lanes(v[i])[k]);
        }
    }
    m = block_reduce<BLOCK, true>(m, scratch_max);

    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (i * BLOCK + threadIdx.x < units) {
#pragma unroll
            for (int k = 0; k < W; ++k) {
                float e = __expf(lanes(v[i])[k] - m);
                lanes(v[i])[k] = e;
                s += e;
            }
        }
    }
    const float inv = 1.0f / block_reduce<BLOCK, false>(s, scratch_sum);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int u = i * BLOCK + threadIdx.x;
        if (u < units) {
#pragma unroll
            for (int k = 0; k < W; ++k) lanes(v[i])[k] *= inv;
            __stcs(y + u, v[i]);
        }
    }
}

// (m, s) stands for s * exp(-m): merge two such partial sums.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;  // both empty
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
    m = mn;
}

template <bool VEC4>
__global__ __launch_bounds__(1024) void softmax_row_online(const float* __restrict__ input,
                                                            float* __restrict__ output, int cols) {
    using T = typename Unit<VEC4>::type;
    constexpr int W = Unit<VEC4>::width;
    constexpr int BLOCK = 1024, WARPS = BLOCK / 32;
    __shared__ float scratch_m[WARPS], scratch_s[WARPS];
    const int units = cols / W;
    const T* x = reinterpret_cast<const T*>(input + (size_t)blockIdx.x * cols);
    T* y = reinterpret_cast<T*>(output + (size_t)blockIdx.x * cols);

    float m = -INFINITY, s = 0.0f;
    for (int u = threadIdx.x; u < units; u += BLOCK) {
        T v = __ldg(x + u);
        float vm = -INFINITY;
#pragma unroll
        for (int k = 0; k < W; ++k) vm = fmaxf(vm, lanes(v)[k]);
        float vs = 0.0f;
#pragma unroll
        for (int k = 0; k < W; ++k) vs += __expf(lanes(v)[k] - vm);
        merge(m, s, vm, vs);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        float m2 = __shfl_xor_sync(FULL, m, offset), s2 = __shfl_xor_sync(FULL, s, offset);
        merge(m, s, m2, s2);
    }
    if (threadIdx.x % 32 == 0) {
        scratch_m[threadIdx.x / 32] = m;
        scratch_s[threadIdx.x / 32] = s;
    }
    __syncthreads();
    m = -INFINITY;
    s = 0.0f;
    for (int w = 0; w < WARPS; ++w) merge(m, s, scratch_m[w], scratch_s[w]);
    const float inv = 1.0f / s;
    for (int u = threadIdx.x; u < units; u += BLOCK) {
        T v = __ldcs(x + u);  // last use of the row
#pragma unroll
        for (int k = 0; k < W; ++k) lanes(v)[k] = __expf(lanes(v)[k] - m) * inv;
        __stcs(y + u, v);
    }
}

template <bool VEC4>
void launch(const float* input, float* output, int rows, int cols) {
    const int units = cols / Unit<VEC4>::width;
    if (units <= 32 * 1) softmax_row_in_registers<32, 1, VEC4><<<rows, 32>>>(input, output, cols);
    else if (units <= 32 * 4) softmax_row_in_registers<32, 4, VEC4><<<rows, 32>>>(input, output, cols);
    else if (units <= 32 * 16) softmax_row_in_registers<32, 16, VEC4><<<rows, 32>>>(input, output, cols);
    else if (units <= 256 * 4) softmax_row_in_registers<256, 4, VEC4><<<rows, 256>>>(input, output, cols);
    else if (units <= 256 * 8) softmax_row_in_registers<256, 8, VEC4><<<rows, 256>>>(input, output, cols);
    else if (units <= 1024 * 8) softmax_row_in_registers<1024, 8, VEC4><<<rows, 1024>>>(input, output, cols);
    else softmax_row_online<VEC4><<<rows, 1024>>>(input, output, cols);
}

}  // namespace

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    const bool aligned = cols % 4 == 0 && ((uintptr_t)input | (uintptr_t)output) % 16 == 0;
    if (aligned) launch<true>(input, output, rows, cols);
    else launch<false>(input, output, rows, cols);
}
