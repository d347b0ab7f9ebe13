// rmsnorm reference: each row read once and written once.
//
// Up to 65536 columns (8192 when rows are not 16-byte aligned) a row stays in
// registers: each thread loads ITEMS units (8 halves as one 16-byte load, or
// one half), accumulates its float32 sum of squares, the group of threads
// that owns the row adds the partials (shuffles, then one shared-memory slot
// per warp and one barrier), and the same registers are scaled and stored.
// Narrow rows (up to 128 units) take one warp each, several rows per block,
// no barrier. Wider unaligned rows stream: one block per row, a pass for the
// sum of squares and a second read (mostly from L2) to write.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr float EPS = 1e-6f;  // spec.md, "Math"

template <bool VEC8>
struct Unit;  // what one thread loads at a time
template <>
struct Unit<true> {
    using type = uint4;  // 8 halves, 16 bytes
    static constexpr int width = 8;
};
template <>
struct Unit<false> {
    using type = half;
    static constexpr int width = 1;
};

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(FULL, v, offset);
    return v;
}

__device__ __forceinline__ float sum_of_squares(uint4 v) {
    const half2* h = reinterpret_cast<const half2*>(&v);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 f = __half22float2(h[k]);
        s = fmaf(f.x, f.x, fmaf(f.y, f.y, s));
    }
    return s;
}
__device__ __forceinline__ float sum_of_squares(half v) {
    float f = __half2float(v);
    return f * f;
}

// y = x * inv_rms * w in float32, rounded once to half
__device__ __forceinline__ uint4 normalise(uint4 v, uint4 w, float inv_rms) {
    const half2* h = reinterpret_cast<const half2*>(&v);
    const half2* g = reinterpret_cast<const half2*>(&w);
    uint4 out;
    half2* o = reinterpret_cast<half2*>(&out);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 x = __half22float2(h[k]), gw = __half22float2(g[k]);
        o[k] = __floats2half2_rn(x.x * inv_rms * gw.x, x.y * inv_rms * gw.y);
    }
    return out;
}
__device__ __forceinline__ half normalise(half v, half w, float inv_rms) {
    return __float2half_rn(__half2float(v) * inv_rms * __half2float(w));
}

// A group of GROUP threads owns a row; BLOCK / GROUP rows per block. Groups of
// 32 or fewer reduce with shuffles alone (a whole warp runs the shuffles even
// where some of its groups have no row), wider ones through shared memory.
template <int BLOCK, int GROUP, int ITEMS, bool VEC8>
__global__ __launch_bounds__(BLOCK) void rmsnorm_row_in_registers(const half* __restrict__ input,
                                                                  const half* __restrict__ weight,
                                                                  half* __restrict__ output, int rows, int cols) {
    static_assert(GROUP <= 32 ? BLOCK % 32 == 0 : BLOCK == GROUP, "a wide group is the whole block");
    using T = typename Unit<VEC8>::type;
    constexpr int W = Unit<VEC8>::width;
    const int units = cols / W;
    const int row = blockIdx.x * (BLOCK / GROUP) + threadIdx.x / GROUP;
    const int t = threadIdx.x % GROUP;
    const bool live = row < rows;
    const T* x = reinterpret_cast<const T*>(input + (size_t)row * cols);
    const T* w = reinterpret_cast<const T*>(weight);
    T* y = reinterpret_cast<T*>(output + (size_t)row * cols);

    T v[ITEMS];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int u = i * GROUP + t;
        if (live && u < units) {
            v[i] = __ldcs(x + u);  // streamed: read once, keep L2 for the weight
            s += sum_of_squares(v[i]);
        }
    }
    if (GROUP <= 32) {
        for (int offset = GROUP / 2; offset > 0; offset /= 2) s += __shfl_xor_sync(FULL, s, offset);
    } else {
        __shared__ float partial[BLOCK / 32];
        s = warp_sum(s);
        if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
        __syncthreads();
        s = 0.0f;
#pragma unroll
        for (int k = 0; k < BLOCK / 32; ++k) s += partial[k];
    }
    const float inv_rms = rsqrtf(s / cols + EPS);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int u = i * GROUP + t;
        if (live && u < units) __stcs(y + u, normalise(v[i], __ldg(w + u), inv_rms));
    }
}

// Rows too wide for registers without 16-byte alignment: one block per row,
// the sum of squares in one pass, the scaled row in a second read.
__global__ __launch_bounds__(1024) void rmsnorm_row_streamed(const half* __restrict__ input,
                                                            const half* __restrict__ weight,
                                                            half* __restrict__ output, int cols) {
    __shared__ float partial[32];
    const half* x = input + (size_t)blockIdx.x * cols;
    half* y = output + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 1024) s += sum_of_squares(__ldg(x + c));
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
    __syncthreads();
    s = 0.0f;
    for (int k = 0; k < 32; ++k) s += partial[k];
    const float inv_rms = rsqrtf(s / cols + EPS);
    for (int c = threadIdx.x; c < cols; c += 1024) y[c] = normalise(__ldcs(x + c), __ldg(weight + c), inv_rms);
}

template <int BLOCK, int GROUP, int ITEMS, bool VEC8>
void launch_in_registers(const half* input, const half* weight, half* output, int rows, int cols) {
    constexpr int ROWS_PER_BLOCK = BLOCK / GROUP;
    rmsnorm_row_in_registers<BLOCK, GROUP, ITEMS, VEC8>
        <<<(rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, BLOCK>>>(input, weight, output, rows, cols);
}

template <bool VEC8>
void launch(const half* input, const half* weight, half* output, int rows, int cols) {
    const int units = cols / Unit<VEC8>::width;
    if (units <= 4) launch_in_registers<128, 4, 1, VEC8>(input, weight, output, rows, cols);
    else if (units <= 32) launch_in_registers<128, 32, 1, VEC8>(input, weight, output, rows, cols);
    else if (units <= 128) launch_in_registers<128, 32, 4, VEC8>(input, weight, output, rows, cols);
    else if (units <= 512) launch_in_registers<128, 128, 4, VEC8>(input, weight, output, rows, cols);
    else if (units <= 1024) launch_in_registers<256, 256, 4, VEC8>(input, weight, output, rows, cols);
    else if (units <= 2048) launch_in_registers<256, 256, 8, VEC8>(input, weight, output, rows, cols);
    else if (units <= 8192) launch_in_registers<1024, 1024, 8, VEC8>(input, weight, output, rows, cols);
    else rmsnorm_row_streamed<<<rows, 1024>>>(input, weight, output, cols);
}

}  // namespace

extern "C" void solve(const half* input, const half* weight, half* output, int rows, int cols) {
    const bool aligned = cols % 8 == 0 && ((uintptr_t)input | (uintptr_t)weight | (uintptr_t)output) % 16 == 0;
    if (aligned) launch<true>(input, weight, output, rows, cols);
    else launch<false>(input, weight, output, rows, cols);
}
