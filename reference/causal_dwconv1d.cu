// causal_dwconv1d reference: x read from DRAM once, y written once, 16-byte accesses.
//
// A thread owns VEC = 4 consecutive channels (a float4; 1 channel when rows
// are not 16-byte aligned) and STEPS = 16 consecutive time steps of one
// sequence. It loads the STEPS + width - 1 rows of x its outputs need all at
// once (up to 19 independent 16-byte loads in flight per thread), then slides
// the window in registers: each x element is used width times but loaded once
// by this thread, and the width - 1 halo rows it shares with the tile before
// it come from L2, not DRAM (neighbouring tiles run at the same time). Rows
// before t = 0 are zeros, never loads: nothing leaks in from the previous
// sequence of the batch.
//
// The width (1..4) is a template parameter, so the taps are registers and the
// tap loop unrolls. A block is THREADS = 128 threads: CX along channels (a
// warp reads 32 consecutive float4 = 512 contiguous bytes per row) times
// 128 / CX along time; CX shrinks (down to 1) for narrow channel counts, so
// that threads are not left without channels.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int STEPS = 16;
constexpr int THREADS = 128;

template <bool VEC4>
struct Unit;
template <>
struct Unit<true> {
    using type = float4;
    static constexpr int width = 4;
    static __device__ __forceinline__ float4 zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
    static __device__ __forceinline__ float4 fma(float4 w, float4 v, float4 acc) {
        return make_float4(fmaf(w.x, v.x, acc.x), fmaf(w.y, v.y, acc.y), fmaf(w.z, v.z, acc.z),
                           fmaf(w.w, v.w, acc.w));
    }
};
template <>
struct Unit<false> {
    using type = float;
    static constexpr int width = 1;
    static __device__ __forceinline__ float zero() { return 0.f; }
    static __device__ __forceinline__ float fma(float w, float v, float acc) { return fmaf(w, v, acc); }
};

__device__ __forceinline__ float& lane(float4& v, int i) { return (&v.x)[i]; }
__device__ __forceinline__ float& lane(float& v, int) { return v; }

// Grid: one block per (channel block, time tile, sequence), channel blocks
// fastest so that the tiles sharing halo rows run close together in time.
template <int WIDTH, bool VEC4>
__global__ __launch_bounds__(THREADS) void dwconv_tiles(const float* __restrict__ x, const float* __restrict__ weight,
                                                        const float* __restrict__ bias, float* __restrict__ y,
                                                        int seq_len, int channels, int channel_blocks,
                                                        int time_tiles) {
    using U = Unit<VEC4>;
    using T = typename U::type;
    constexpr int W = U::width;
    const int cx = blockDim.x, ty = blockDim.y;
    const int units = channels / W;
    int block = blockIdx.x;
    const int channel_block = block % channel_blocks;
    block /= channel_blocks;
    const int tile = block % time_tiles;
    const int b = block / time_tiles;

    const int u = channel_block * cx + threadIdx.x;  // this thread's unit of channels
    const int t0 = (tile * ty + threadIdx.y) * STEPS;  // its first output step
    if (u >= units || t0 >= seq_len) return;

    T w[WIDTH], acc0;
#pragma unroll
    for (int i = 0; i < W; ++i) {
        const int c = u * W + i;
        lane(acc0, i) = __ldg(bias + c);
#pragma unroll
        for (int k = 0; k < WIDTH; ++k) lane(w[k], i) = __ldg(weight + c * WIDTH + k);
    }

    // Row r of the window is x at step t0 - (WIDTH-1) + r; rows outside
    // [0, seq_len) are not loaded (zeros before 0, unused after the end).
    const T* xs = reinterpret_cast<const T*>(x + (size_t)b * seq_len * channels) + u;
    T* ys = reinterpret_cast<T*>(y + (size_t)b * seq_len * channels) + u;
    T window[STEPS + WIDTH - 1];
#pragma unroll
    for (int r = 0; r < STEPS + WIDTH - 1; ++r) {
        const int t = t0 - (WIDTH - 1) + r;
        window[r] = (t >= 0 && t < seq_len) ? __ldg(xs + (size_t)t * units) : U::zero();
    }
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
        const int t = t0 + s;
        if (t < seq_len) {
            T acc = acc0;
#pragma unroll
            for (int k = 0; k < WIDTH; ++k) acc = U::fma(w[k], window[s + k], acc);
            __stcs(ys + (size_t)t * units, acc);  // streamed: written once, never re-read here
        }
    }
}

template <int WIDTH, bool VEC4>
void launch(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
            int channels) {
    const int units = channels / Unit<VEC4>::width;
    int cx = 1;  // threads along channels: enough to cover them, up to the whole block
    while (cx < THREADS && cx < units) cx *= 2;
    const int ty = THREADS / cx;
    const int channel_blocks = (units + cx - 1) / cx;
    const int time_tiles = (seq_len + ty * STEPS - 1) / (ty * STEPS);
    const long long blocks = (long long)channel_blocks * time_tiles * batch;
    dwconv_tiles<WIDTH, VEC4><<<(unsigned)blocks, dim3(cx, ty)>>>(x, weight, bias, y, seq_len, channels,
                                                                  channel_blocks, time_tiles);
}

template <bool VEC4>
void launch_width(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                  int channels, int width) {
    switch (width) {
        case 1: launch<1, VEC4>(x, weight, bias, y, batch, seq_len, channels); break;
        case 2: launch<2, VEC4>(x, weight, bias, y, batch, seq_len, channels); break;
        case 3: launch<3, VEC4>(x, weight, bias, y, batch, seq_len, channels); break;
        default: launch<4, VEC4>(x, weight, bias, y, batch, seq_len, channels); break;
    }
}

}  // namespace

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    const bool aligned = channels % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (aligned)
        launch_width<true>(x, weight, bias, y, batch, seq_len, channels, width);
    else
        launch_width<false>(x, weight, bias, y, batch, seq_len, channels, width);
}
