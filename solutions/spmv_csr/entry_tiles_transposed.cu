#include <cuda_runtime.h>
#include <stdint.h>

// spmv_csr, entry tiles with a segmented scan and a transposed gather: the
// gathers of x go in lane-consecutive order (the columns exchanged within the
// warp through shared memory), so a warp's load of x touches ~4 sectors
// instead of the ~16 of gathering in the owners' layout when columns come in
// runs of 8 (TRANSPOSED_GATHER 0 keeps that layout, for comparison).
//
// The entries are cut into tiles of exactly TILE entries (rows cut wherever a
// boundary falls), so every block has the same work whatever the row lengths;
// rows are found by where they start, not by a search.
//
//   1. mark_rows, one thread per row: y[r] = 0 for an empty row and for a row
//      that crosses a tile boundary (its tiles add their parts with atomics);
//      and for every tile whose first entry lies in row r, tile_row[t] = r.
//      One coalesced pass over row_ptr (4 MB); no search.
//   2. spmv_tiles, one block per tile: each thread loads ITEMS entries as
//      ITEMS/4 int4 + float4 loads (group g of the tile is entries
//      g*4*THREADS + 4*thread .. + 3: every load instruction of a warp reads
//      512 contiguous bytes), gathers x through the read-only path and keeps
//      the products in registers. The rows that start in the tile write their
//      row index at their first entry in a shared array (-1 elsewhere); each
//      thread reads its entries' marks as int4 and sums its runs, storing the
//      rows that start and end in its own entries; a block-wide segmented scan
//      (warp shuffles, then the warps' totals) gives each thread the sum of
//      the row it starts in, and the last thread has the tile's last row.
//      A row is stored with one plain store when it lies in one tile, and
//      added with one atomicAdd per tile when it crosses a boundary (step 1
//      zeroed it). No third launch, no scratch beyond one int per tile.
//
// Compared with the merge-path reference: no per-thread binary search, four
// entries per load instruction instead of one; the columns and the gathered
// x values make one round trip through shared memory (the products do not):
// ~3.5 load/store instructions per entry instead of ~8.

#ifndef ITEMS
#define ITEMS 8  // entries per thread, a multiple of 4
#endif
#ifndef TRANSPOSED_GATHER
#define TRANSPOSED_GATHER 1  // 0: gather x in the owners' layout (lane l: entries 4l..4l+3)
#endif
constexpr int THREADS = 256;
constexpr int GROUPS = ITEMS / 4;
constexpr int GROUP_SPAN = 4 * THREADS;  // entries per group across the block
constexpr int TILE = ITEMS * THREADS;
constexpr unsigned FULL = 0xffffffffu;

struct Segment {  // a run of entries: the row of the last row start in it (-1: none) and the sum since
    int row;
    float sum;
};

__device__ __forceinline__ Segment combine(Segment earlier, Segment later) {
    return later.row >= 0 ? later : Segment{earlier.row, earlier.sum + later.sum};
}

__global__ void __launch_bounds__(THREADS)
    mark_rows(const int* __restrict__ row_ptr, float* __restrict__ y, int rows, int* __restrict__ tile_row) {
    int r = blockIdx.x * THREADS + threadIdx.x;
    if (r >= rows) return;
    int start = row_ptr[r], end = row_ptr[r + 1];
    if (start == end) {
        y[r] = 0.0f;
        return;
    }
    int last_tile = (end - 1) / TILE;
    if (start / TILE != last_tile) y[r] = 0.0f;  // its tiles add their parts
    for (int t = (start + TILE - 1) / TILE; t <= last_tile; ++t) tile_row[t] = r;  // tiles whose first entry is in r
}

template <bool VECTOR>
__global__ void __launch_bounds__(THREADS)
    spmv_tiles(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
               const float* __restrict__ x, float* __restrict__ y, int rows, int nnz, int tiles,
               const int* __restrict__ tile_row) {
    __shared__ int4 s_mark4[TILE / 4];  // s_mark[i]: the row whose first entry is k0 + i, or -1
    __shared__ Segment s_total[GROUPS][THREADS / 32];
#if TRANSPOSED_GATHER
    __shared__ __align__(16) int s_swap[THREADS / 32][128 * GROUPS];  // read and written as int4 / float4
#endif
    int* s_mark = reinterpret_cast<int*>(s_mark4);

    const int tile = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int k0 = tile * TILE, n = min(TILE, nnz - k0), k1 = k0 + n;

    // the entries first: their latency overlaps the marking below
    int col[GROUPS][4];
    float val[GROUPS][4];
    if (VECTOR && n == TILE) {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            int4 c = __ldcs(reinterpret_cast<const int4*>(col_idx + k0 + g * GROUP_SPAN) + tid);
            float4 v = __ldcs(reinterpret_cast<const float4*>(values + k0 + g * GROUP_SPAN) + tid);
            col[g][0] = c.x; col[g][1] = c.y; col[g][2] = c.z; col[g][3] = c.w;
            val[g][0] = v.x; val[g][1] = v.y; val[g][2] = v.z; val[g][3] = v.w;
        }
    } else {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                int e = g * GROUP_SPAN + 4 * tid + j;
                col[g][j] = e < n ? __ldcs(col_idx + k0 + e) : 0;
                val[g][j] = e < n ? __ldcs(values + k0 + e) : 0.0f;
            }
    }

    const int first_row = tile_row[tile];  // the row holding entry k0
    const int last_candidate = tile + 1 < tiles ? tile_row[tile + 1] : rows - 1;
    const bool first_open = row_ptr[first_row] < k0;  // first_row began in an earlier tile
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) s_mark4[g * THREADS + tid] = make_int4(-1, -1, -1, -1);
    __syncthreads();
    if (tid == 0) s_mark[0] = first_row;
    // rows after first_row start after k0; those starting before k1 lie in (first_row, last_candidate]
    for (int r = first_row + 1 + tid; r <= last_candidate; r += THREADS) {
        int start = row_ptr[r];
        if (start < k1 && row_ptr[r + 1] > start) s_mark[start - k0] = r;
    }

    float p[GROUPS][4];
#if TRANSPOSED_GATHER
    // lane l of warp w owns entries 4l .. 4l+3 of the warp's 128 in each group;
    // gathered in that layout, a warp's load of x would span 128 entries (16
    // runs of 8 columns, each sector fetched by four instructions). The columns
    // go through shared memory so that load j of a lane is entry 32j + l:
    // 32 consecutive entries, about 4 sectors per instruction.
    int* swap = s_swap[warp];
#pragma unroll
    for (int g = 0; g < GROUPS; ++g)
        reinterpret_cast<int4*>(swap + 128 * g)[lane] = make_int4(col[g][0], col[g][1], col[g][2], col[g][3]);
    __syncwarp();
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
        float gathered[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) gathered[j] = __ldg(x + swap[128 * g + 32 * j + lane]);
#pragma unroll
        for (int j = 0; j < 4; ++j)  // the word this lane just read: no other lane touches it
            reinterpret_cast<float*>(swap)[128 * g + 32 * j + lane] = gathered[j];
    }
    __syncwarp();
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
        float4 xv = reinterpret_cast<const float4*>(swap + 128 * g)[lane];
        p[g][0] = val[g][0] * xv.x; p[g][1] = val[g][1] * xv.y; p[g][2] = val[g][2] * xv.z; p[g][3] = val[g][3] * xv.w;
    }
#else
#pragma unroll
    for (int g = 0; g < GROUPS; ++g)
#pragma unroll
        for (int j = 0; j < 4; ++j) p[g][j] = val[g][j] * __ldg(x + col[g][j]);
#endif
    __syncthreads();

    // a row whose part here is complete or partial: partial rows were zeroed by mark_rows
    auto emit = [&](int row, float sum, bool partial) {
        if (partial)
            atomicAdd(y + row, sum);
        else
            y[row] = sum;
    };

    // each group's four entries: rows that start and end here are written, the
    // sum before the first start (lead) waits for the scan
    Segment own[GROUPS];
    float lead[GROUPS];
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
        int4 m4 = s_mark4[g * THREADS + tid];
        int mark[4] = {m4.x, m4.y, m4.z, m4.w};
        own[g] = Segment{-1, 0.0f};
        lead[g] = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (mark[j] >= 0) {
                if (own[g].row >= 0)
                    emit(own[g].row, own[g].sum, own[g].row == first_row && first_open);
                else
                    lead[g] = own[g].sum;
                own[g] = Segment{mark[j], 0.0f};
            }
            own[g].sum += p[g][j];
        }
    }

    // block-wide exclusive segmented scan, group by group (group g follows group g-1)
    Segment inclusive[GROUPS];
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) inclusive[g] = own[g];
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            Segment up{__shfl_up_sync(FULL, inclusive[g].row, offset), __shfl_up_sync(FULL, inclusive[g].sum, offset)};
            if (lane >= offset) inclusive[g] = combine(up, inclusive[g]);
        }
    }
    if (lane == 31)
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) s_total[g][warp] = inclusive[g];
    __syncthreads();
    Segment before{-1, 0.0f};  // everything before this thread's group g
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
        Segment in_block = before;
        for (int w = 0; w < THREADS / 32; ++w) {
            Segment t = s_total[g][w];
            if (w < warp) in_block = combine(in_block, t);
            before = combine(before, t);  // after the loop: everything up to the end of group g
        }
        Segment exclusive{__shfl_up_sync(FULL, inclusive[g].row, 1), __shfl_up_sync(FULL, inclusive[g].sum, 1)};
        if (lane == 0) exclusive = Segment{-1, 0.0f};
        exclusive = combine(in_block, exclusive);
        if (own[g].row >= 0 && exclusive.row >= 0)  // the row running into this group ends at its first start
            emit(exclusive.row, exclusive.sum + lead[g], exclusive.row == first_row && first_open);
        if (g == GROUPS - 1 && tid == THREADS - 1) {  // the tile's last row
            Segment last = combine(exclusive, own[g]);
            emit(last.row, last.sum, (last.row == first_row && first_open) || row_ptr[last.row + 1] > k1);
        }
    }
}

// one int per tile, kept between calls and grown when a matrix needs more tiles
static int* tile_row_scratch = nullptr;
static int scratch_tiles = 0;

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    if (rows <= 0) return;
    int tiles = (int)(((long long)nnz + TILE - 1) / TILE);
    if (tiles > scratch_tiles) {
        cudaFree(tile_row_scratch);
        cudaMalloc(&tile_row_scratch, sizeof(int) * tiles);
        scratch_tiles = tiles;
    }
    mark_rows<<<(rows + THREADS - 1) / THREADS, THREADS>>>(row_ptr, y, rows, tile_row_scratch);
    if (tiles == 0) return;
    bool aligned = (((uintptr_t)col_idx | (uintptr_t)values) & 15) == 0;
    if (aligned)
        spmv_tiles<true><<<tiles, THREADS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles, tile_row_scratch);
    else
        spmv_tiles<false><<<tiles, THREADS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles, tile_row_scratch);
}
