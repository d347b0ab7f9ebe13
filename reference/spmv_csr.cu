#include <cuda_runtime.h>
#include <stdint.h>

// spmv_csr reference: warp tiles, counted in instructions and latencies.
//
// The entries are cut into tiles of 256 (8 per lane, in order), one warp per
// tile, so the row bookkeeping is per lane and per warp, with no block-wide
// scan and no barrier; entry tiles of 2,048 per block with a block segmented
// scan (solutions/spmv_csr/entry_tiles_transposed.cu, the reference before)
// issue 1.7 warp instructions per entry, this 1.2.
//
//   1. index_rows, four rows per thread: tile_first[t] = the row holding entry
//      256t, bit 31 set when that row began in an earlier tile (a row holding
//      many tile starts is written by its whole warp); y = 0 for a row that
//      crosses a tile boundary, whose tiles add their parts with atomics.
//   2. spmv_warps, persistent warps (as many blocks as fit; warp w takes tiles
//      w, w + W, ...): per tile, the lanes' 8 entries (int4/float4 loads) and
//      the gathers of x in entry order across the lanes (gather j of lane l is
//      entry 32j + l: 32 consecutive entries touch a few cache lines, a lane's
//      own 8 per instruction would touch 32), through shared memory. The rows
//      that start in the tile come from row_ptr of the rows between this
//      tile's first row and the next tile's: a bit per start in a per-lane
//      word and the row index at the start's offset; empty rows there get
//      their 0. A lane without a start sums its 8 products, a lane with one
//      splits them there (two or more: a loop that stores the rows ending
//      inside the lane); a warp segmented scan (five shuffles, the heads from
//      one ballot) carries the open row's sum across lanes. Each row part is
//      written once: a plain store for a row whose entries all lie in the
//      tile, an atomicAdd otherwise. The next tile's tile_first and row_ptr
//      are loaded while the current tile is worked on, so a tile waits only
//      for its entries and its gathers.
//
// Compile-time switches (measured in reference/spmv_csr.md): LANE_ENTRIES
// (entries per lane, default 8), MIN_BLOCKS (__launch_bounds__ blocks per SM,
// default 5: 48 registers, no spills), BLOCKS_PER_SM (a cap on the grid).

#ifndef LANE_ENTRIES
#define LANE_ENTRIES 8  // entries per lane, a multiple of 4 (at most 32: a bit each in a word)
#endif
constexpr int TILE = 32 * LANE_ENTRIES;  // entries per warp
constexpr int WARPS = 8;                 // tiles per block
constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned OPEN = 0x80000000u;   // tile_first: the row began in an earlier tile

__device__ __forceinline__ int first_tile_in(int start) { return (start + TILE - 1) / TILE; }

// Four rows per thread (one wave of threads on the official matrix): tile_first
// for the tiles whose first entry lies in a row; y = 0 for a row that crosses a
// tile boundary.
__global__ void __launch_bounds__(256)
    index_rows(const int* __restrict__ row_ptr, float* __restrict__ y, int rows, unsigned* __restrict__ tile_first) {
    const int lane = threadIdx.x & 31;
    const int r0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    int bound[5];
#pragma unroll
    for (int j = 0; j < 5; ++j) bound[j] = row_ptr[min(r0 + j, rows)];
    int t0[4], count[4];
    unsigned many = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int r = r0 + j, start = bound[j], end = bound[j + 1];
        t0[j] = first_tile_in(start);
        const int t1 = (end - 1) / TILE;
        count[j] = r < rows && end > start ? max(0, t1 - t0[j] + 1) : 0;
        if (r < rows && end > start && start / TILE != t1) y[r] = 0.0f;
        if (count[j] <= 2)
            for (int t = t0[j]; t < t0[j] + count[j]; ++t) tile_first[t] = (unsigned)r | (TILE * t > start ? OPEN : 0u);
        many |= (count[j] > 2) << j;
    }
    // rows with many tile starts: the whole warp writes them, one row at a time
    for (unsigned lanes = __ballot_sync(FULL, many != 0); lanes; lanes &= lanes - 1) {
        const int owner = __ffs(lanes) - 1;
        const unsigned owner_many = __shfl_sync(FULL, many, owner);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if (!(owner_many >> j & 1)) continue;
            const int owner_t0 = __shfl_sync(FULL, t0[j], owner), owner_count = __shfl_sync(FULL, count[j], owner);
            const int owner_start = __shfl_sync(FULL, bound[j], owner);
            for (int i = lane; i < owner_count; i += 32) {
                const int t = owner_t0 + i;
                tile_first[t] = (unsigned)(r0 - 4 * lane + 4 * owner + j) | (TILE * t > owner_start ? OPEN : 0u);
            }
        }
    }
}

__device__ __forceinline__ void emit(float* y, int row, float sum, bool whole) {
    if (whole)
        y[row] = sum;
    else
        atomicAdd(y + row, sum);
}

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 5
#endif

// What a tile needs before its entries: its first row (bit 31: begun earlier),
// the next tile's, and row_ptr of the rows from its first on (one per lane).
struct TileRows {
    unsigned info, next_info;
    int start, end;
};

__device__ __forceinline__ unsigned tile_info(const unsigned* tile_first, int tile, int tiles, int rows) {
    return tile < tiles ? tile_first[tile] : (unsigned)(rows - 1);
}

__device__ __forceinline__ void load_rows(TileRows& t, const int* row_ptr, int lane) {
    const int clamped = min((int)(t.info & ~OPEN) + lane, (int)(t.next_info & ~OPEN));
    t.start = row_ptr[clamped];
    t.end = row_ptr[clamped + 1];
}

// Persistent warps: warp w takes tiles w, w + W, ... and loads the next tile's
// TileRows while it works on the current one, so a tile waits only for its
// entries and its gathers.
template <bool VECTOR>
__global__ void __launch_bounds__(32 * WARPS, MIN_BLOCKS)
    spmv_warps(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
               const float* __restrict__ x, float* __restrict__ y, int rows, int nnz, int tiles,
               const unsigned* __restrict__ tile_first) {
    __shared__ unsigned s_bits[WARPS][32];            // lane l: bit i set when a row starts at its entry i
    __shared__ int s_row[WARPS][TILE];                // at a start: its row
    __shared__ __align__(16) int s_swap[WARPS][TILE];  // the columns, then the gathered x, in entry order
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int stride = gridDim.x * WARPS;
    int tile = blockIdx.x * WARPS + warp;
    if (tile >= tiles) return;
    TileRows now{tile_first[tile], tile_info(tile_first, tile + 1, tiles, rows), 0, 0};
    load_rows(now, row_ptr, lane);
    int* swap = s_swap[warp];
    for (;;) {
        const int e0 = tile * TILE, e1 = min(e0 + TILE, nnz);
        const int mine = e0 + LANE_ENTRIES * lane;  // this lane's first entry
        int col[LANE_ENTRIES];
        float val[LANE_ENTRIES];
        if (VECTOR && e1 - e0 == TILE) {
#pragma unroll
            for (int q = 0; q < LANE_ENTRIES / 4; ++q) {
                const int4 c = __ldcs(reinterpret_cast<const int4*>(col_idx + mine) + q);
                const float4 v = __ldcs(reinterpret_cast<const float4*>(values + mine) + q);
                col[4 * q] = c.x, col[4 * q + 1] = c.y, col[4 * q + 2] = c.z, col[4 * q + 3] = c.w;
                val[4 * q] = v.x, val[4 * q + 1] = v.y, val[4 * q + 2] = v.z, val[4 * q + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int i = 0; i < LANE_ENTRIES; ++i) {
                const bool in = mine + i < e1;
                col[i] = in ? __ldcs(col_idx + mine + i) : 0;
                val[i] = in ? __ldcs(values + mine + i) : 0.0f;
            }
        }
        const int next_tile = tile + stride;
        TileRows next{tile_info(tile_first, next_tile, tiles, rows), tile_info(tile_first, next_tile + 1, tiles, rows), 0, 0};

        const int first_row = (int)(now.info & ~OPEN);
        const int last_candidate = (int)(now.next_info & ~OPEN);
        s_bits[warp][lane] = 0u;
        // the gathers go in entry order across the lanes (gather j of lane l: entry
        // 32j + l): 32 consecutive entries per load instruction touch a few cache
        // lines, where this lane's own 8 would touch 32 lines per instruction
#pragma unroll
        for (int q = 0; q < LANE_ENTRIES / 4; ++q)
            reinterpret_cast<int4*>(swap)[LANE_ENTRIES / 4 * lane + q] = make_int4(col[4 * q], col[4 * q + 1], col[4 * q + 2], col[4 * q + 3]);
        __syncwarp();
        float gathered[LANE_ENTRIES];
#pragma unroll
        for (int j = 0; j < LANE_ENTRIES; ++j) gathered[j] = __ldg(x + swap[32 * j + lane]);
        if (next_tile < tiles) load_rows(next, row_ptr, lane);  // waits only for next's tile_first
        // the rows starting in the tile: in [first_row, last_candidate], non-empty, start in [e0, e1);
        // an empty row there gets its 0 here
        auto mark = [&](int row, int row_start, int row_end) {
            if (row_start == row_end) {
                if (row_start >= e0 && row_start <= e1) y[row] = 0.0f;  // at e1 exactly: before the next tile's range
            } else if (row_start >= e0 && row_start < e1) {
                const int at = row_start - e0;
                atomicOr(&s_bits[warp][at / LANE_ENTRIES], 1u << (at % LANE_ENTRIES));
                s_row[warp][at] = row;
            }
        };
        if (first_row + lane <= last_candidate) mark(first_row + lane, now.start, now.end);
        if (tile == 0)  // the empty rows before the first entry's row
            for (int row = lane; row < first_row; row += 32) y[row] = 0.0f;
        for (int further = first_row + lane + 32; further <= last_candidate; further += 32)
            mark(further, row_ptr[further], row_ptr[further + 1]);
        __syncwarp();  // every lane has read its columns
#pragma unroll
        for (int j = 0; j < LANE_ENTRIES; ++j) swap[32 * j + lane] = __float_as_int(gathered[j]);
        __syncwarp();
        float p[LANE_ENTRIES];
#pragma unroll
        for (int q = 0; q < LANE_ENTRIES / 4; ++q) {
            const float4 g = reinterpret_cast<const float4*>(swap)[LANE_ENTRIES / 4 * lane + q];
            p[4 * q] = val[4 * q] * g.x, p[4 * q + 1] = val[4 * q + 1] * g.y;
            p[4 * q + 2] = val[4 * q + 2] * g.z, p[4 * q + 3] = val[4 * q + 3] * g.w;
        }
        const unsigned bits = s_bits[warp][lane];
        // this lane's parts: lead (before its first start, the open row's), tail (from its last start)
        float lead = 0.0f, tail = 0.0f;
        int tail_row = -1;
        if (__any_sync(FULL, bits & (bits - 1))) {  // some lane holds two starts or more: rows end inside it
            float run = 0.0f;
#pragma unroll
            for (int i = 0; i < LANE_ENTRIES; ++i) {
                if (bits >> i & 1) {
                    if (tail_row < 0)
                        lead = run;
                    else
                        y[tail_row] = run;  // started and ended inside this lane: the whole row
                    tail_row = s_row[warp][LANE_ENTRIES * lane + i];
                    run = 0.0f;
                }
                run += p[i];
            }
            if (tail_row < 0)
                lead = run;
            else
                tail = run;
        } else {  // at most one start per lane: split the sum there
            const unsigned from_start = bits ? ~(bits - 1) : 0u;  // entries at or after the start
#pragma unroll
            for (int i = 0; i < LANE_ENTRIES; ++i) {
                if (from_start >> i & 1)
                    tail += p[i];
                else
                    lead += p[i];
            }
            if (bits) tail_row = s_row[warp][LANE_ENTRIES * lane + __ffs(bits) - 1];
        }

        // segmented inclusive scan across lanes: a lane with a start heads a segment
        // (its tail); lane 0 heads the first one (the tile's first row)
        const unsigned heads = __ballot_sync(FULL, bits != 0u);
        const unsigned below_or_me = heads & (FULL >> (31 - lane));
        const int head = 31 - __clz(below_or_me | 1u);
        const int reach = lane - head;  // lanes since this lane's segment began
        float v = bits ? tail : lead;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float up = __shfl_up_sync(FULL, v, d);
            if (reach >= d) v += up;
        }
        const float before = __shfl_up_sync(FULL, v, 1);
        const float arriving = lane ? before : 0.0f;  // the open row's sum before this lane
        const unsigned heads_below = heads & ((1u << lane) - 1u);
        const int previous = heads_below ? 31 - __clz(heads_below) : 0;
        const int previous_row = __shfl_sync(FULL, tail_row, previous);
        if (bits && (lane || !(bits & 1u))) {  // the row open before this lane's first start ends there
            const bool from_start = heads_below != 0;  // else: the tile's first row, begun before e0
            emit(y, from_start ? previous_row : first_row, arriving + lead, from_start);
        }
        const int last_head = 31 - __clz(heads | 1u);
        const int last_row = __shfl_sync(FULL, tail_row, last_head);
        if (lane == 31) {  // the row open at the end of the tile
            const bool started_here = heads != 0u;
            const int row = started_here ? last_row : first_row;
            const bool continues = tile + 1 < tiles && (now.next_info & OPEN) && last_candidate == row;
            emit(y, row, v, started_here && !continues);
        }
        if (next_tile >= tiles) return;
        __syncwarp();  // the shared arrays are rewritten by the next tile
        tile = next_tile;
        now = next;
    }
}

// one word per tile, kept between calls and grown when a matrix needs more tiles
static unsigned* tile_first_scratch = nullptr;
static int scratch_tiles = 0;

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    if (rows <= 0) return;
    const int tiles = (int)(((long long)nnz + TILE - 1) / TILE);
    if (tiles > scratch_tiles) {
        cudaFree(tile_first_scratch);
        cudaMalloc(&tile_first_scratch, sizeof(unsigned) * tiles);
        scratch_tiles = tiles;
    }
    if (tiles == 0) {  // every row empty
        cudaMemsetAsync(y, 0, sizeof(float) * rows);
        return;
    }
    index_rows<<<((rows + 3) / 4 + 255) / 256, 256>>>(row_ptr, y, rows, tile_first_scratch);
    // a persistent grid: as many blocks as fit at once, but no more than there are tiles
    int device = 0, sms = 1, per_sm = 1;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spmv_warps<true>, 32 * WARPS, 0);
#ifdef BLOCKS_PER_SM
    per_sm = min(per_sm, BLOCKS_PER_SM);
#endif
    const int blocks = min((tiles + WARPS - 1) / WARPS, max(1, sms * per_sm));
    const bool aligned = (((uintptr_t)col_idx | (uintptr_t)values) & 15) == 0;
    if (aligned)
        spmv_warps<true><<<blocks, 32 * WARPS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles, tile_first_scratch);
    else
        spmv_warps<false><<<blocks, 32 * WARPS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles, tile_first_scratch);
}
