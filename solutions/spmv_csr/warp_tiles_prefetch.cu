#include <cuda_runtime.h>
#include <stdint.h>

// spmv_csr, entry tiles per warp with the next tile's entries loading while a
// tile is summed.
//
// The reference (entry tiles of 2,048 per block of 256 threads) is
// latency-bound: a block's stream loads are in flight only at its start, then
// it walks a chain (tile_row -> row_ptr -> the x gathers -> two block-wide
// barriers of the scan) with no stream bytes in flight, and every warp waits
// at the barriers for the slowest one. Here:
//
//  * a tile is WTILE = 256 entries and belongs to one warp: the segmented scan
//    is a warp scan (shuffles, no block barrier), so no warp ever waits for
//    another;
//  * warps are persistent (warp g takes tiles g, g + W, ...) and load the
//    entries of their next tile into registers before they work on the
//    current one: every warp has 2 KB of stream in flight at every step of
//    its chain (~64 KB per SM at 32 warps against the ~48 KB that 4.2 TB/s
//    needs at ~1.5 us of loaded DRAM latency);
//  * each tile's first row, and whether that row began in an earlier tile,
//    come from one word (tile_row, bit 31 = open), also loaded a tile ahead;
//    whether the tile's last row runs on is read off the next tile's word,
//    so the only dependent loads left in a tile are the x gathers and the
//    row_ptr of the rows that start in it (issued together).
//
// Loads are lane-consecutive (entry 32j + l in lane l: 128 contiguous bytes
// per warp instruction), so the x gathers go in entry order too (about 4
// sectors per instruction on runs of 8 columns); the products go through
// shared memory once so that lane l sums entries 8l .. 8l + 7 in order.
//
// mark_rows (one thread per row): y[r] = 0 for empty rows and rows that cross
// a tile boundary (their tiles add their parts with atomicAdd), and
// tile_row[t] for every tile whose first entry lies in row r; a row holding
// many tile starts (the official matrix's longest holds 2,543) is written by
// its whole warp, 32 words per store instruction.

#ifndef ITEMS
#define ITEMS 8  // entries per lane, a multiple of 4 (16: warp_tiles_prefetch_16.cu)
#endif
constexpr int WTILE = 32 * ITEMS;     // entries per warp tile
constexpr int THREADS = 256;          // 8 warps per block; they share nothing but the block
constexpr int WARPS = THREADS / 32;
constexpr int MIN_TILES_PER_WARP = 4;  // a warp's first tile is the only one whose load is not overlapped
constexpr unsigned OPEN = 0x80000000u;  // tile_row flag: the row began before the tile
constexpr unsigned FULL = 0xffffffffu;

struct Segment {  // a run of entries: the row of the last row start in it (-1: none) and the sum since
    int row;
    float sum;
};

__device__ __forceinline__ Segment combine(Segment earlier, Segment later) {
    return later.row >= 0 ? later : Segment{earlier.row, earlier.sum + later.sum};
}

__global__ void __launch_bounds__(THREADS)
    mark_rows(const int* __restrict__ row_ptr, float* __restrict__ y, int rows, unsigned* __restrict__ tile_row) {
    const int r = blockIdx.x * THREADS + threadIdx.x, lane = threadIdx.x & 31;
    int start = 0, first_tile = 0, last_tile = -1;  // tiles whose first entry is in row r
    if (r < rows) {
        start = row_ptr[r];
        int end = row_ptr[r + 1];
        if (start == end) {
            y[r] = 0.0f;
        } else {
            first_tile = (start + WTILE - 1) / WTILE;
            last_tile = (end - 1) / WTILE;
            if (start / WTILE != last_tile) y[r] = 0.0f;  // its tiles add their parts
        }
    }
    auto word = [](int row, int row_start, int t) { return (unsigned)row | (row_start < t * WTILE ? OPEN : 0u); };
    if (first_tile == last_tile) tile_row[first_tile] = word(r, start, first_tile);
    unsigned many = __ballot_sync(FULL, last_tile > first_tile);  // every lane is here: no early return above
    while (many) {
        const int src = __ffs(many) - 1;
        many &= many - 1;
        const int ft = __shfl_sync(FULL, first_tile, src), lt = __shfl_sync(FULL, last_tile, src);
        const int row = __shfl_sync(FULL, r, src), row_start = __shfl_sync(FULL, start, src);
        for (int t = ft + lane; t <= lt; t += 32) tile_row[t] = word(row, row_start, t);
    }
}

struct TileLoad {  // what a tile needs from memory before its chain starts
    int col[ITEMS];
    float val[ITEMS];
    unsigned first;  // tile_row[t]
    int next_row;    // the row holding the next tile's first entry, -1 for the last tile
};

__device__ __forceinline__ void load_tile(TileLoad& L, const int* __restrict__ col_idx,
                                          const float* __restrict__ values, const unsigned* __restrict__ tile_row,
                                          int t, int tiles, int nnz, int lane) {
    const int k0 = t * WTILE, n = min(WTILE, nnz - k0);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        int e = 32 * j + lane;
        L.col[j] = e < n ? __ldcs(col_idx + k0 + e) : 0;
        L.val[j] = e < n ? __ldcs(values + k0 + e) : 0.0f;
    }
    L.first = tile_row[t];
    L.next_row = t + 1 < tiles ? (int)(tile_row[t + 1] & ~OPEN) : -1;
}

__global__ void __launch_bounds__(THREADS)
    spmv_warp_tiles(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                    const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y, int rows,
                    int nnz, int tiles, const unsigned* __restrict__ tile_row) {
    __shared__ int4 s_mark4[WARPS][WTILE / 4];     // s_mark[i]: the row whose first entry is k0 + i, or -1
    __shared__ float4 s_prod4[WARPS][WTILE / 4];  // the products, entry order
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int stride = gridDim.x * WARPS;
    int t = blockIdx.x * WARPS + warp;
    if (t >= tiles) return;
    int* s_mark = reinterpret_cast<int*>(s_mark4[warp]);
    float* s_prod = reinterpret_cast<float*>(s_prod4[warp]);

    TileLoad next;
    load_tile(next, col_idx, values, tile_row, t, tiles, nnz, lane);
    for (; t < tiles; t += stride) {
        const TileLoad cur = next;
        if (t + stride < tiles) load_tile(next, col_idx, values, tile_row, t + stride, tiles, nnz, lane);

        const int k0 = t * WTILE, n = min(WTILE, nnz - k0), k1 = k0 + n;
        const int first_row = (int)(cur.first & ~OPEN);
        const bool first_open = (cur.first & OPEN) != 0;
        const int last_candidate = cur.next_row >= 0 ? cur.next_row : rows - 1;

        // the gathers and the row starts' loads go out together
        float p[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) p[j] = 32 * j + lane < n ? cur.val[j] * __ldg(x + cur.col[j]) : 0.0f;
#pragma unroll
        for (int g = 0; g < ITEMS / 4; ++g) s_mark4[warp][32 * g + lane] = make_int4(-1, -1, -1, -1);
        __syncwarp();
        if (lane == 0) s_mark[0] = first_row;
        // rows after first_row start after k0; those starting before k1 lie in (first_row, last_candidate]
        for (int r = first_row + 1 + lane; r <= last_candidate; r += 32) {
            int start = row_ptr[r];
            if (start < k1 && row_ptr[r + 1] > start) s_mark[start - k0] = r;
        }
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) s_prod[32 * j + lane] = p[j];
        __syncwarp();

        // a row is stored once when it lies in this tile, added when it crosses a boundary (zeroed by mark_rows)
        auto emit = [&](int row, float sum, bool partial) {
            if (partial)
                atomicAdd(y + row, sum);
            else
                y[row] = sum;
        };
        // this lane's entries 8l .. 8l + 7: rows that start and end here are written,
        // the sum before the first start (lead) waits for the scan
        int mark[ITEMS];
        float q[ITEMS];
#pragma unroll
        for (int g = 0; g < ITEMS / 4; ++g) {
            int4 m4 = s_mark4[warp][ITEMS / 4 * lane + g];
            float4 p4 = s_prod4[warp][ITEMS / 4 * lane + g];
            mark[4 * g] = m4.x; mark[4 * g + 1] = m4.y; mark[4 * g + 2] = m4.z; mark[4 * g + 3] = m4.w;
            q[4 * g] = p4.x; q[4 * g + 1] = p4.y; q[4 * g + 2] = p4.z; q[4 * g + 3] = p4.w;
        }
        Segment own{-1, 0.0f};
        float lead = 0.0f;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            if (mark[j] >= 0) {
                if (own.row >= 0)
                    emit(own.row, own.sum, own.row == first_row && first_open);
                else
                    lead = own.sum;
                own = Segment{mark[j], 0.0f};
            }
            own.sum += q[j];
        }
        Segment inclusive = own;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            Segment up{__shfl_up_sync(FULL, inclusive.row, offset), __shfl_up_sync(FULL, inclusive.sum, offset)};
            if (lane >= offset) inclusive = combine(up, inclusive);
        }
        Segment exclusive{__shfl_up_sync(FULL, inclusive.row, 1), __shfl_up_sync(FULL, inclusive.sum, 1)};
        if (lane == 0) exclusive = Segment{-1, 0.0f};
        if (own.row >= 0 && exclusive.row >= 0)  // the row running into this lane ends at its first start
            emit(exclusive.row, exclusive.sum + lead, exclusive.row == first_row && first_open);
        if (lane == 31)  // the tile's last row: partial if it began earlier or runs into the next tile
            emit(inclusive.row, inclusive.sum, (inclusive.row == first_row && first_open) || inclusive.row == cur.next_row);
        __syncwarp();  // every lane has read the marks and products before the next tile overwrites them
    }
}

// one word per tile, kept between calls and grown when a matrix needs more tiles
static unsigned* tile_row_scratch = nullptr;
static int scratch_tiles = 0;

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    if (rows <= 0) return;
    static int sms = 0, per_sm = 0;  // device properties, read once
    if (sms == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spmv_warp_tiles, THREADS, 0);
    }
    const int tiles = (int)(((long long)nnz + WTILE - 1) / WTILE);
    if (tiles > scratch_tiles) {
        cudaFree(tile_row_scratch);
        cudaMalloc(&tile_row_scratch, sizeof(unsigned) * tiles);
        scratch_tiles = tiles;
    }
    mark_rows<<<(rows + THREADS - 1) / THREADS, THREADS>>>(row_ptr, y, rows, tile_row_scratch);
    if (tiles == 0) return;
    const int needed = (tiles + WARPS * MIN_TILES_PER_WARP - 1) / (WARPS * MIN_TILES_PER_WARP);
    const int blocks = min(needed, sms * max(per_sm, 1));
    spmv_warp_tiles<<<blocks, THREADS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles, tile_row_scratch);
}
