#include <cuda_runtime.h>
#include <stdint.h>

// prefix_sum: lookback_wide_window.cu with 4096-element tiles (16 per thread):
// the reference's tile with the wider look-back alone. One pass, decoupled look-back, the
// look-back reading 128 predecessors per round trip.
//
// Why the window matters: a tile's inclusive prefix can be published only
// after it has read an inclusive prefix within its window, one L2 round trip
// (latency L) after that one was written. So the frontier of published
// prefixes advances at most WINDOW tiles per L, and the scan streams at most
// WINDOW * tile bytes / L. With 32 predecessors per round and 4096-element
// tiles (32 KB of traffic each) that is 1 MB per L: about 2.8 TB/s at
// L = 0.37 us, the rate reference/prefix_sum.cu reaches. Here it is 128
// predecessors (4 status words per lane) over 4096-element tiles: 4 MB per L.
//
// Per tile (256 threads x 16 elements):
//  1. thread 0 takes a ticket from a counter (tile order = ticket order, so a
//     tile waits only on tiles whose blocks already run);
//  2. coalesced float4 loads into shared memory padded one word in 32, then
//     each thread sums its 16 consecutive elements; a warp scan of the thread
//     sums and the 8 warp totals give the tile aggregate, which warp 0
//     publishes at once, before any look-back;
//  3. every thread writes its tile-local inclusive values back to shared
//     memory, so that after the look-back only "add the prefix, store" is left;
//  4. warp 0 looks back until it meets an inclusive prefix, waiting only for
//     the predecessors nearer than that one, and publishes its own;
//  5. coalesced float4 stores of prefix + local value.
// Status words are 64 bits, (epoch << 34) | (flag << 32) | float bits, written
// and read whole: the value travels with its flag, so no fence is needed
// (nothing else is communicated between blocks). The epoch is solve()'s call
// count: words of earlier calls read as "not ready", no clearing per call.

#ifndef ITEMS
#define ITEMS 16  // elements per thread: 4096-element tiles, as reference/prefix_sum.cu
#endif
#ifndef LANE_WORDS
#define LANE_WORDS 4  // status words each lane reads per look-back round
#endif

constexpr int THREADS = 256;
constexpr int TILE = THREADS * ITEMS;
constexpr int WARPS = THREADS / 32;
constexpr int WINDOW = 32 * LANE_WORDS;
constexpr int PADDED = TILE + TILE / 32;
constexpr unsigned long long FLAG_AGGREGATE = 1ull, FLAG_INCLUSIVE = 2ull;
constexpr unsigned NONE = 0xffffffffu;

__device__ __forceinline__ int pad(int i) { return i + (i >> 5); }

__device__ __forceinline__ unsigned long long pack(unsigned epoch, unsigned long long flag, float v) {
    return ((unsigned long long)epoch << 34) | (flag << 32) | (unsigned long long)__float_as_uint(v);
}

__device__ __forceinline__ unsigned flag_of(unsigned long long s, unsigned epoch) {
    return (s >> 34) == epoch ? (unsigned)((s >> 32) & 3ull) : 0u;
}

__device__ __forceinline__ unsigned long long read_status(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ void write_status(unsigned long long* p, unsigned long long v) {
    *(volatile unsigned long long*)p = v;
}

// The sum of the aggregates of the tiles before `tile` down to and including
// the nearest inclusive prefix. Run by one whole warp.
__device__ float look_back(const unsigned long long* status, int tile, unsigned epoch, int lane) {
    float prefix = 0.0f;
    for (int end = tile;; end -= WINDOW) {  // predecessors [0, end) not yet accounted for
        unsigned long long s[LANE_WORDS];
#pragma unroll
        for (int j = 0; j < LANE_WORDS; ++j) {
            int pred = end - 1 - (lane * LANE_WORDS + j);  // distance lane*LANE_WORDS + j: lane 0, j 0 is the nearest
            s[j] = pred >= 0 ? read_status(status + pred) : pack(epoch, FLAG_INCLUSIVE, 0.0f);
        }
        unsigned first_inclusive, first_missing;
        while (true) {
            unsigned my_inclusive = NONE, my_missing = NONE;
#pragma unroll
            for (int j = LANE_WORDS - 1; j >= 0; --j) {
                unsigned f = flag_of(s[j], epoch);
                if (f == FLAG_INCLUSIVE) my_inclusive = lane * LANE_WORDS + j;
                if (f == 0u) my_missing = lane * LANE_WORDS + j;
            }
            first_inclusive = __reduce_min_sync(0xffffffffu, my_inclusive);
            first_missing = __reduce_min_sync(0xffffffffu, my_missing);
            if (first_missing == NONE || first_missing > first_inclusive) break;
            // a tile nearer than the nearest inclusive prefix has not published: read the missing ones again
#pragma unroll
            for (int j = 0; j < LANE_WORDS; ++j)
                if (flag_of(s[j], epoch) == 0u) s[j] = read_status(status + end - 1 - (lane * LANE_WORDS + j));
        }
        float v = 0.0f;
#pragma unroll
        for (int j = 0; j < LANE_WORDS; ++j)
            if ((unsigned)(lane * LANE_WORDS + j) <= first_inclusive) v += __uint_as_float((unsigned)s[j]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        prefix += v;
        if (first_inclusive != NONE) return prefix;
    }
}

// This block's ticket: tickets are drawn 0, 1, ... in the order blocks start,
// and the block drawing the launch's last one puts the counter back to 0 for
// the next launch (nothing kept on the host that a failed launch could put out
// of step).
__device__ __forceinline__ unsigned long long draw_ticket(unsigned long long* counter, unsigned long long tickets) {
    unsigned long long ticket = atomicAdd(counter, 1ull);
    if (ticket == tickets - 1) atomicExch(counter, 0ull);
    return ticket;
}

__global__ void __launch_bounds__(THREADS) scan_kernel(const float* __restrict__ in, float* __restrict__ out, int N,
                                                       unsigned long long* status, unsigned long long* tickets,
                                                       unsigned long long launch_tiles, unsigned epoch,
                                                       bool vectorized) {
    __shared__ float tile[PADDED];
    __shared__ float warp_totals[WARPS];
    __shared__ float tile_prefix;
    __shared__ int tile_of_block;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0) tile_of_block = (int)draw_ticket(tickets, launch_tiles);
    __syncthreads();
    const int tile_id = tile_of_block;
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

    // 2. thread runs, warp scan of their sums, tile aggregate
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
    if (t == 0) write_status(status + tile_id, pack(epoch, tile_id == 0 ? FLAG_INCLUSIVE : FLAG_AGGREGATE, aggregate));

    // 3. tile-local inclusive values, in place (each thread rewrites only the slots it read)
    const float thread_exclusive = warp_exclusive + (inclusive - x[ITEMS - 1]);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) tile[pad(t * ITEMS + j)] = thread_exclusive + x[j];

    // 4. look-back
    if (warp == 0) {
        float prefix = 0.0f;
        if (tile_id > 0) {
            prefix = look_back(status, tile_id, epoch, lane);
            if (lane == 0) write_status(status + tile_id, pack(epoch, FLAG_INCLUSIVE, prefix + aggregate));
        }
        if (lane == 0) tile_prefix = prefix;
    }
    __syncthreads();

    // 5. store
    const float prefix = tile_prefix;
    if (full) {
        float4* dst = reinterpret_cast<float4*>(out + base);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            int e = 4 * (t + k * THREADS);
            __stcs(dst + t + k * THREADS, make_float4(prefix + tile[pad(e)], prefix + tile[pad(e + 1)],
                                                      prefix + tile[pad(e + 2)], prefix + tile[pad(e + 3)]));
        }
    } else {
        for (int e = t; e < TILE; e += THREADS)
            if (base + e < N) out[base + e] = prefix + tile[pad(e)];
    }
}

extern "C" void solve(const float* input, float* output, int N) {
    static unsigned long long* status = nullptr;  // one word per tile, then the ticket counter
    static int capacity = 0;                       // tiles
    static unsigned epoch = 0;
    static unsigned long long launch_tiles = 0;  // tickets handed out by earlier calls
    if (N <= 0) return;
    int tiles = (N + TILE - 1) / TILE;
    if (tiles > capacity) {
        if (status) cudaFree(status);
        if (cudaMalloc(&status, (size_t)(tiles + 1) * sizeof(unsigned long long)) != cudaSuccess) {
            status = nullptr, capacity = 0;
            return;  // out of memory: output stays unwritten and the check says so
        }
        cudaMemset(status, 0, (size_t)(tiles + 1) * sizeof(unsigned long long));  // epoch 0: never a live epoch
        capacity = tiles;
    }
    epoch = epoch % ((1u << 30) - 1) + 1;  // 1 .. 2^30 - 1
    bool vectorized = (((uintptr_t)input | (uintptr_t)output) & 15) == 0;
    scan_kernel<<<tiles, THREADS>>>(input, output, N, status, status + capacity, (unsigned long long)tiles, epoch, vectorized);
}
