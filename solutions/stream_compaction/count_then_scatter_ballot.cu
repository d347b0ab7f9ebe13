#include <cuda_runtime.h>

// Two passes over the input with warp ballots, three launches:
//  1. count: every tile of 4096 elements (256 threads x 16) counts its
//     elements > 0 with one __ballot_sync + __popc per 32 elements (no
//     shared-memory scan) and writes the tile count;
//  2. offsets: one block of 1024 threads scans the tile counts (each thread
//     a run of consecutive tiles, a shuffle scan over the warps) into tile
//     offsets and writes the total into count;
//  3. scatter: every tile reads its elements again; within a warp, the rank
//     of a kept element is the popcount of the ballot below its lane, so the
//     kept elements of each 32 land in consecutive slots (coalesced stores),
//     and every index at or past the total gets a zero.
// The input is read twice: 12N bytes instead of the 8N a single pass moves.
constexpr int THREADS = 256;
constexpr int ITEMS = 16;
constexpr int WARPS = THREADS / 32;
constexpr int TILE = THREADS * ITEMS;       // 4096
constexpr int WARP_SPAN = 32 * ITEMS;       // each warp owns 512 consecutive elements
constexpr int SCAN_THREADS = 1024;

__device__ __forceinline__ int warp_inclusive_scan(int v, int lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += y;
    }
    return v;
}

__global__ void __launch_bounds__(THREADS) count_tiles(const float* __restrict__ in, int* tile_counts, int n) {
    __shared__ int warp_counts[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long first = (long long)blockIdx.x * TILE + warp * WARP_SPAN + lane;
    int c = 0;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        long long i = first + 32 * j;
        c += __popc(__ballot_sync(0xffffffffu, i < n && in[i] > 0.0f));
    }
    if (lane == 0) warp_counts[warp] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < WARPS; ++w) total += warp_counts[w];
        tile_counts[blockIdx.x] = total;
    }
}

__global__ void __launch_bounds__(SCAN_THREADS) scan_tile_counts(int* tile_counts, int tiles, int* count) {
    __shared__ int warp_totals[SCAN_THREADS / 32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int per_thread = (tiles + SCAN_THREADS - 1) / SCAN_THREADS;
    const int begin = t * per_thread, end = min(begin + per_thread, tiles);
    int run = 0;
    for (int b = begin; b < end; ++b) run += tile_counts[b];
    int inclusive = warp_inclusive_scan(run, lane);
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < SCAN_THREADS / 32; ++w) {
        if (w < warp) before += warp_totals[w];
        total += warp_totals[w];
    }
    int offset = before + inclusive - run;
    for (int b = begin; b < end; ++b) {
        int c = tile_counts[b];
        tile_counts[b] = offset;
        offset += c;
    }
    if (t == 0) *count = total;
}

__global__ void __launch_bounds__(THREADS) scatter_tiles(const float* __restrict__ in, float* __restrict__ out,
                                                         const int* tile_offsets, const int* count, int n) {
    __shared__ int warp_counts[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long first = (long long)blockIdx.x * TILE + warp * WARP_SPAN + lane;
    const unsigned below = (1u << lane) - 1u;
    float x[ITEMS];
    unsigned keep[ITEMS];
    int c = 0;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        long long i = first + 32 * j;
        x[j] = i < n ? in[i] : 0.0f;
        keep[j] = __ballot_sync(0xffffffffu, x[j] > 0.0f);
        c += __popc(keep[j]);
    }
    if (lane == 0) warp_counts[warp] = c;
    __syncthreads();
    int slot = tile_offsets[blockIdx.x];
    for (int w = 0; w < warp; ++w) slot += warp_counts[w];
    const int total = *count;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        if (x[j] > 0.0f) out[slot + __popc(keep[j] & below)] = x[j];
        slot += __popc(keep[j]);
        long long i = first + 32 * j;
        if (i < n && i >= total) out[i] = 0.0f;
    }
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    static int* tile_counts = nullptr;
    static int capacity = 0;
    int tiles = (N + TILE - 1) / TILE;
    if (tiles > capacity) {
        if (tile_counts) cudaFree(tile_counts);
        cudaMalloc(&tile_counts, tiles * sizeof(int));
        capacity = tiles;
    }
    count_tiles<<<tiles, THREADS>>>(input, tile_counts, N);
    scan_tile_counts<<<1, SCAN_THREADS>>>(tile_counts, tiles, count);
    scatter_tiles<<<tiles, THREADS>>>(input, output, tile_counts, count, N);
}
