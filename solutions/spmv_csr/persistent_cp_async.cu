#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <stdint.h>

// spmv_csr, entry tiles in persistent blocks with the entries staged by
// cp.async one tile ahead. The tiling, the row marks and the segmented scan
// are those of reference/spmv_csr.cu; what changes is when the entries move.
//
// In the one-tile-per-block reference a block issues its 16 KB of col_idx and
// values at its start and then walks a chain of dependent steps (tile_row,
// row_ptr of its rows, the x gathers, the scan's barriers) with no stream
// bytes in flight; ~5.5 resident blocks per SM did not keep DRAM busy (57% in
// ncu). Here a grid of resident blocks takes tiles blockIdx.x, + gridDim.x,
// ...; while a block works on one tile the next one's entries are already
// being copied global -> shared by cp.async (STAGES - 1 tiles ahead), so each
// SM always has ~16 KB per block in flight whatever step the block is in.
// The chain itself is shortened too: the tile's first row comes from a
// register loaded one tile ahead, the marks are cleared at the end of the
// previous tile, and the row_ptr loads of the marking go out before the
// block waits for its entries.
//
// The gathers read the columns from shared memory in lane-consecutive order
// (load j of lane l is entry 32j + l of the warp's 128: ~4 x sectors per
// warp instruction when columns come in runs of 8) and write the products
// back over the values, which the scan then reads as float4 in the owners'
// layout (lane l: entries 4l .. 4l+3 of each group).

#ifndef ITEMS
#define ITEMS 8  // entries per thread, a multiple of 4
#endif
#ifndef STAGES
#define STAGES 2  // tiles of entries in shared memory per block: the current one and STAGES-1 ahead
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


// start copying tile `tile`'s entries into stage buffers (zeros past nnz)
__device__ __forceinline__ void stage_entries(int* s_col, float* s_val, const int* __restrict__ col_idx,
                                              const float* __restrict__ values, int tile, int tiles, int nnz,
                                              bool vector) {
    if (tile >= tiles) return;
    const int tid = threadIdx.x;
    const int k0 = tile * TILE, n = min(TILE, nnz - k0);
    if (vector && n == TILE) {
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            const int q = g * THREADS + tid;  // int4 index within the tile
            __pipeline_memcpy_async(s_col + 4 * q, col_idx + k0 + 4 * q, 16);
            __pipeline_memcpy_async(s_val + 4 * q, values + k0 + 4 * q, 16);
        }
    } else {
        for (int e = tid; e < TILE; e += THREADS) {
            const bool in = e < n;
            const int k = in ? k0 + e : 0;  // a valid address even when nothing is read
            __pipeline_memcpy_async(s_col + e, col_idx + k, 4, in ? 0 : 4);
            __pipeline_memcpy_async(s_val + e, values + k, 4, in ? 0 : 4);
        }
    }
}

__global__ void __launch_bounds__(THREADS)
    spmv_tiles(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
               const float* __restrict__ x, float* __restrict__ y, int rows, int nnz, int tiles,
               const int* __restrict__ tile_row, bool vector) {
    __shared__ __align__(16) int s_col[STAGES][TILE];
    __shared__ __align__(16) float s_val[STAGES][TILE];  // the values, then their products
    __shared__ int4 s_mark4[TILE / 4];  // s_mark[i]: the row whose first entry is k0 + i, or -1
    __shared__ Segment s_total[GROUPS][THREADS / 32];
    int* s_mark = reinterpret_cast<int*>(s_mark4);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, stride = gridDim.x;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // one commit per stage, even when empty, so the counts line up
        stage_entries(s_col[s], s_val[s], col_idx, values, blockIdx.x + s * stride, tiles, nnz, vector);
        __pipeline_commit();
    }
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) s_mark4[g * THREADS + tid] = make_int4(-1, -1, -1, -1);
    __syncthreads();
    int next_first_row = blockIdx.x < tiles ? tile_row[blockIdx.x] : 0;

    int stage = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += stride) {
        const int k0 = tile * TILE, n = min(TILE, nnz - k0), k1 = k0 + n;
        const int first_row = next_first_row;  // the row holding entry k0
        if (tile + stride < tiles) next_first_row = tile_row[tile + stride];
        const int last_candidate = tile + 1 < tiles ? tile_row[tile + 1] : rows - 1;
        const bool first_open = row_ptr[first_row] < k0;  // first_row began in an earlier tile

        {  // the tile STAGES-1 ahead goes into the stage the previous tile used
            const int ahead = (stage + STAGES - 1) % STAGES;
            stage_entries(s_col[ahead], s_val[ahead], col_idx, values, tile + (STAGES - 1) * stride, tiles, nnz,
                          vector);
            __pipeline_commit();
        }

        // marks (cleared at the end of the previous tile): rows after first_row
        // start after k0; those starting before k1 lie in (first_row, last_candidate]
        if (tid == 0) s_mark[0] = first_row;
        for (int r = first_row + 1 + tid; r <= last_candidate; r += THREADS) {
            int start = row_ptr[r];
            if (start < k1 && row_ptr[r + 1] > start) s_mark[start - k0] = r;
        }
        __pipeline_wait_prior(STAGES - 1);  // this tile's entries (this thread's copies)
        __syncthreads();                    // everyone's copies and marks

        // products, in lane-consecutive order, over the values
        const int* col = s_col[stage];
        float* val = s_val[stage];
        {
            float gathered[GROUPS][4];
#pragma unroll
            for (int g = 0; g < GROUPS; ++g)
#pragma unroll
                for (int j = 0; j < 4; ++j) gathered[g][j] = __ldg(x + col[g * GROUP_SPAN + 128 * warp + 32 * j + lane]);
#pragma unroll
            for (int g = 0; g < GROUPS; ++g)
#pragma unroll
                for (int j = 0; j < 4; ++j) {  // the word this lane reads and writes: no other lane touches it
                    const int e = g * GROUP_SPAN + 128 * warp + 32 * j + lane;
                    val[e] *= gathered[g][j];
                }
        }
        __syncwarp();  // a warp's products are read back only by the same warp
        float p[GROUPS][4];
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            float4 p4 = reinterpret_cast<const float4*>(val)[g * THREADS + tid];
            p[g][0] = p4.x; p[g][1] = p4.y; p[g][2] = p4.z; p[g][3] = p4.w;
        }

        // a row whose part here is complete or partial: partial rows were zeroed by mark_rows
        auto emit = [&](int row, float sum, bool partial) {
            if (partial)
                atomicAdd(y + row, sum);
            else
                y[row] = sum;
        };

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
        // every thread has read its marks: clear them for the next tile
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) s_mark4[g * THREADS + tid] = make_int4(-1, -1, -1, -1);
        Segment before{-1, 0.0f};
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            Segment in_block = before;
            for (int w = 0; w < THREADS / 32; ++w) {
                Segment t = s_total[g][w];
                if (w < warp) in_block = combine(in_block, t);
                before = combine(before, t);
            }
            Segment exclusive{__shfl_up_sync(FULL, inclusive[g].row, 1), __shfl_up_sync(FULL, inclusive[g].sum, 1)};
            if (lane == 0) exclusive = Segment{-1, 0.0f};
            exclusive = combine(in_block, exclusive);
            if (own[g].row >= 0 && exclusive.row >= 0)
                emit(exclusive.row, exclusive.sum + lead[g], exclusive.row == first_row && first_open);
            if (g == GROUPS - 1 && tid == THREADS - 1) {
                Segment last = combine(exclusive, own[g]);
                emit(last.row, last.sum, (last.row == first_row && first_open) || row_ptr[last.row + 1] > k1);
            }
        }
        __syncthreads();  // s_total, the cleared marks and this stage are free for the next tile
        stage = (stage + 1) % STAGES;
    }
    __pipeline_wait_prior(0);  // no copy outlives the block
}

// one int per tile, kept between calls and grown when a matrix needs more tiles
static int* tile_row_scratch = nullptr;
static int scratch_tiles = 0;
static int resident_blocks = 0;  // blocks of spmv_tiles that fit on the device at once

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    if (rows <= 0) return;
    int tiles = (int)(((long long)nnz + TILE - 1) / TILE);
    if (tiles > scratch_tiles) {
        cudaFree(tile_row_scratch);
        cudaMalloc(&tile_row_scratch, sizeof(int) * tiles);
        scratch_tiles = tiles;
    }
    if (resident_blocks == 0) {
        int device = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spmv_tiles, THREADS, 0);
        resident_blocks = (sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }
    mark_rows<<<(rows + THREADS - 1) / THREADS, THREADS>>>(row_ptr, y, rows, tile_row_scratch);
    if (tiles == 0) return;
    bool vector = (((uintptr_t)col_idx | (uintptr_t)values) & 15) == 0;
    spmv_tiles<<<min(tiles, resident_blocks), THREADS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tiles,
                                                       tile_row_scratch, vector);
}
