#include <cuda_runtime.h>
#include <stdint.h>

// prefix_sum reference: inclusive scan in one pass (decoupled look-back).
//
// Floor: every element read once and written once, 8N bytes (268 MB at the
// official N = 2^25): ~67 us at 4 TB/s. A single pass reaches it only if
// no block waits long for its predecessors, so the tile prefix travels
// through a status word per tile rather than through a second kernel.
//
// Per tile of 4096 floats (256 threads x 16):
//  1. coalesced float4 loads (4 per thread, striped) into shared memory padded
//     by one word per 32 (conflict-free blocked reads), 64 bytes per thread
//     in flight, 8 resident tiles per SM = 128 KB per SM;
//  2. each thread scans its 16 consecutive elements sequentially, warps scan
//     the thread totals with shuffles, warp 0 scans the 8 warp totals;
//  3. warp 0 publishes the tile aggregate, then looks back 32 predecessors at a
//     time: the nearest one holding an inclusive prefix ends the walk, the
//     aggregates in between are added (a warp reduction), and the tile's
//     inclusive prefix is published;
//  4. results back through shared memory to coalesced float4 stores.
// Status words are 64 bits: (epoch << 34) | (flag << 32) | float bits, written
// and read whole. The epoch is solve()'s call count, so words left by earlier
// calls read as "not ready" and the status array never needs clearing (no
// memset launch per call). Tiles are block indices: blocks are dispatched in
// index order, so a predecessor is always resident or done (CUB's assumption).

constexpr int THREADS = 256;
constexpr int ITEMS = 16;
constexpr int TILE = THREADS * ITEMS;  // 4096
constexpr int WARPS = THREADS / 32;
constexpr int PADDED = TILE + TILE / 32;
constexpr unsigned long long FLAG_AGGREGATE = 1ull, FLAG_INCLUSIVE = 2ull;

__device__ __forceinline__ int pad(int i) { return i + (i >> 5); }

__device__ __forceinline__ unsigned long long pack(unsigned epoch, unsigned long long flag, float v) {
    return ((unsigned long long)epoch << 34) | (flag << 32) | (unsigned long long)__float_as_uint(v);
}

// Volatile, whole 64-bit accesses: the two stores of a tile's word (aggregate,
// then inclusive) must both happen, in order, and reads must see other SMs' stores.
__device__ __forceinline__ unsigned long long read_status(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ void write_status(unsigned long long* p, unsigned long long v) {
    *(volatile unsigned long long*)p = v;
}

__global__ void __launch_bounds__(THREADS) scan_kernel(const float* __restrict__ in, float* __restrict__ out, int N,
                                                       unsigned long long* status, unsigned epoch, bool vectorized) {
    __shared__ float tile[PADDED];
    __shared__ float warp_totals[WARPS];
    __shared__ float tile_prefix;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int tile_id = blockIdx.x;
    const long long base = (long long)tile_id * TILE;
    const bool full = vectorized && base + TILE <= N;

    // 1. load
    if (full) {
        const float4* src = reinterpret_cast<const float4*>(in + base);
        float4 v[ITEMS / 4];
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) v[k] = __ldcs(src + t + k * THREADS);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            int e = 4 * (t + k * THREADS);
            tile[pad(e)] = v[k].x; tile[pad(e + 1)] = v[k].y; tile[pad(e + 2)] = v[k].z; tile[pad(e + 3)] = v[k].w;
        }
    } else {
        for (int e = t; e < TILE; e += THREADS) tile[pad(e)] = base + e < N ? in[base + e] : 0.0f;
    }
    __syncthreads();

    // 2. tile-local inclusive scan
    float x[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) x[j] = tile[pad(t * ITEMS + j)];
#pragma unroll
    for (int j = 1; j < ITEMS; ++j) x[j] += x[j - 1];
    float inclusive = x[ITEMS - 1];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        float y = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += y;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    float warp_exclusive = 0.0f, aggregate = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        float total = warp_totals[w];
        if (w < warp) warp_exclusive += total;
        aggregate += total;
    }
    float thread_exclusive = warp_exclusive + (inclusive - x[ITEMS - 1]);

    // 3. look-back, by warp 0
    if (warp == 0) {
        float prefix = 0.0f;
        if (tile_id == 0) {
            if (lane == 0) write_status(status, pack(epoch, FLAG_INCLUSIVE, aggregate));
        } else {
            if (lane == 0) write_status(status + tile_id, pack(epoch, FLAG_AGGREGATE, aggregate));
            int end = tile_id;  // predecessors [0, end) not yet accounted for
            while (true) {
                int pred = end - 1 - lane;  // lane 0 is the nearest
                unsigned long long s = 0;
                unsigned long long flag;
                // spin until every lane's predecessor (those that exist) has published for this call
                while (true) {
                    s = pred >= 0 ? read_status(status + pred) : pack(epoch, FLAG_INCLUSIVE, 0.0f);
                    flag = (s >> 34) == epoch ? (s >> 32) & 3ull : 0ull;
                    if (__all_sync(0xffffffffu, flag != 0)) break;
                }
                unsigned inclusive_lanes = __ballot_sync(0xffffffffu, flag == FLAG_INCLUSIVE);
                int stop = inclusive_lanes ? __ffs(inclusive_lanes) - 1 : 31;  // nearest inclusive lane
                float v = lane <= stop ? __uint_as_float((unsigned)s) : 0.0f;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                prefix += v;
                if (inclusive_lanes) break;
                end -= 32;
            }
            if (lane == 0) write_status(status + tile_id, pack(epoch, FLAG_INCLUSIVE, prefix + aggregate));
        }
        if (lane == 0) tile_prefix = prefix;
    }
    __syncthreads();

    // 4. store: out = tile prefix + tile-local inclusive value
    const float prefix = tile_prefix;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) tile[pad(t * ITEMS + j)] = prefix + (thread_exclusive + x[j]);
    __syncthreads();
    if (full) {
        float4* dst = reinterpret_cast<float4*>(out + base);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            int e = 4 * (t + k * THREADS);
            __stcs(dst + t + k * THREADS, make_float4(tile[pad(e)], tile[pad(e + 1)], tile[pad(e + 2)], tile[pad(e + 3)]));
        }
    } else {
        for (int e = t; e < TILE; e += THREADS)
            if (base + e < N) out[base + e] = tile[pad(e)];
    }
}

extern "C" void solve(const float* input, float* output, int N) {
    static unsigned long long* status = nullptr;
    static int capacity = 0;  // tiles
    static unsigned epoch = 0;
    if (N <= 0) return;
    int tiles = (N + TILE - 1) / TILE;
    if (tiles > capacity) {
        if (status) cudaFree(status);
        cudaMalloc(&status, (size_t)tiles * sizeof(unsigned long long));
        cudaMemset(status, 0, (size_t)tiles * sizeof(unsigned long long));  // epoch 0: never a live epoch
        capacity = tiles;
    }
    epoch = epoch % ((1u << 30) - 1) + 1;  // 1 .. 2^30 - 1
    bool vectorized = (((uintptr_t)input | (uintptr_t)output) & 15) == 0;
    scan_kernel<<<tiles, THREADS>>>(input, output, N, status, epoch, vectorized);
}
