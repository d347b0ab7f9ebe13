#include <cuda_runtime.h>
#include <limits.h>

// spmv_csr reference: merge-path SpMV (Merrill and Garland, "Merge-based
// parallel sparse matrix-vector multiplication", SC16), written for this
// signature.
//
// The work is the merge of two sorted lists: the rows' end offsets
// (row_ptr[1..rows]) and the entry indices 0..nnz-1. Walking the merge, an
// entry adds its product to the running sum and a row end emits the running
// sum as y[row] and resets it. Cutting the merge into tiles of exactly TILE
// items (rows + nnz items in all) gives every block the same work whatever the
// row lengths are: a 650,925-entry row is spread over about 320 tiles, a run of a
// million empty rows over 489, and neither stalls the grid.
//
//   1. partition: one warp per tile boundary finds where the merge path
//      crosses it (a 32-way search over row_ptr: 5 rounds of one load per
//      lane for a million rows, instead of 20 dependent loads of a binary
//      search).
//   2. tiles: a block loads its tile's row ends and its entries' products
//      values[k] * x[col_idx[k]] into shared memory with coalesced loads
//      (ITEMS loads per thread in flight), then each thread walks ITEMS items
//      of the merge from shared memory. Rows whose end a thread reaches are
//      written; the first one may have started in earlier threads, whose
//      trailing sums a block-wide segmented scan adds in. A tile's trailing
//      partial sum (its last row continues in the next tile) goes to scratch.
//   3. fixup: the tiles' trailing sums are added into y, one atomicAdd per
//      run of equal rows within a warp. Every y[r] was stored (not added) by
//      exactly one thread in step 2, so y needs no zeroing.
//
// Floor: the entries (8 bytes each) dominate; x (4 MB at the official size)
// stays in L2 and the official matrix reads it in aligned runs of 8 columns.

constexpr int THREADS = 256;
constexpr int ITEMS = 8;                   // merge items per thread
constexpr int TILE = THREADS * ITEMS;      // merge items per block
constexpr int PADDED = TILE + TILE / 32;   // one pad word per 32: threads read runs ~ITEMS apart

__device__ __forceinline__ int padded(int i) { return i + (i >> 5); }

// Rows whose end precedes merge position `diagonal` (the path's row coordinate
// there): the first i in [max(0, d - nnz), min(d, rows)] with
// row_ptr[i + 1] > d - i - 1. The whole warp calls it with the same diagonal.
__device__ int merge_path_rows(const int* __restrict__ row_ptr, int rows, int nnz, int diagonal) {
    int lane = threadIdx.x & 31;
    int lo = max(0, diagonal - nnz), hi = min(diagonal, rows);
    while (lo < hi) {
        long long span = hi - lo;
        int pivot = lo + (int)(span * lane / 32);  // non-decreasing in lane, all < hi
        bool before = row_ptr[pivot + 1] <= diagonal - pivot - 1;
        int count = __popc(__ballot_sync(0xffffffffu, before));  // the predicate holds for a prefix of lanes
        int new_lo = count > 0 ? lo + (int)(span * (count - 1) / 32) + 1 : lo;
        int new_hi = count < 32 ? lo + (int)(span * count / 32) : hi;
        lo = new_lo;
        hi = new_hi;
    }
    return lo;
}

__global__ void __launch_bounds__(THREADS)
    partition_tiles(const int* __restrict__ row_ptr, int rows, int nnz, int tiles, int* __restrict__ tile_rows) {
    int tile = (blockIdx.x * THREADS + threadIdx.x) >> 5;  // one warp per boundary: tiles + 1 of them
    if (tile > tiles) return;
    int diagonal = (int)min((long long)tile * TILE, (long long)rows + nnz);
    int r = merge_path_rows(row_ptr, rows, nnz, diagonal);
    if ((threadIdx.x & 31) == 0) tile_rows[tile] = r;
}

struct Carry {  // a segmented-scan element: a partial sum, and whether a row ended in it
    int ended;
    float sum;
};

__device__ __forceinline__ Carry combine(Carry earlier, Carry later) {
    return {earlier.ended | later.ended, later.ended ? later.sum : earlier.sum + later.sum};
}

__global__ void __launch_bounds__(THREADS)
    spmv_tiles(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ values,
               const float* __restrict__ x, float* __restrict__ y, int rows, int nnz,
               const int* __restrict__ tile_rows, int* __restrict__ carry_rows, float* __restrict__ carry_sums) {
    __shared__ int s_row_end[TILE + 1];
    __shared__ float s_product[PADDED];
    __shared__ Carry s_warp[THREADS / 32];

    int tile = blockIdx.x;
    long long d0 = (long long)tile * TILE, d1 = min(d0 + TILE, (long long)rows + nnz);
    int row0 = tile_rows[tile], row1 = tile_rows[tile + 1];
    int k0 = (int)(d0 - row0), k1 = (int)(d1 - row1);
    int tile_rows_n = row1 - row0, tile_nnz = k1 - k0;

    // the tile's row ends (a sentinel past them) and its products, coalesced
    for (int i = threadIdx.x; i < tile_rows_n; i += THREADS) s_row_end[i] = row_ptr[row0 + 1 + i];
    if (threadIdx.x == 0) s_row_end[tile_rows_n] = INT_MAX;
    int col[ITEMS];
    float val[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (e < tile_nnz) {
            col[i] = __ldcs(col_idx + k0 + e);
            val[i] = __ldcs(values + k0 + e);
        }
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        int e = threadIdx.x + i * THREADS;
        if (e < tile_nnz) s_product[padded(e)] = val[i] * __ldg(x + col[i]);
    }
    __syncthreads();

    // this thread's start on the tile's merge path: a binary search in shared memory
    int diagonal = min(threadIdx.x * ITEMS, tile_rows_n + tile_nnz);
    int lo = max(0, diagonal - tile_nnz), hi = min(diagonal, tile_rows_n);
    while (lo < hi) {
        int pivot = (lo + hi) >> 1;
        if (s_row_end[pivot] <= k0 + diagonal - pivot - 1)
            lo = pivot + 1;
        else
            hi = pivot;
    }
    int ti = lo, tk = diagonal - lo;

    // walk ITEMS merge items: entries add, row ends emit
    float running = 0.0f;
    int first_row = -1;
    float first_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (ti + tk < tile_rows_n + tile_nnz) {
            if (k0 + tk < s_row_end[ti]) {
                running += s_product[padded(tk)];
                ++tk;
            } else {
                if (first_row < 0) {  // may have started in earlier threads: written after the scan
                    first_row = row0 + ti;
                    first_sum = running;
                } else {
                    y[row0 + ti] = running;
                }
                running = 0.0f;
                ++ti;
            }
        }
    }

    // block-wide segmented scan of (a row ended here, trailing sum)
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Carry mine = {first_row >= 0, running};
    Carry inclusive = mine;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        Carry up = {__shfl_up_sync(0xffffffffu, inclusive.ended, offset), __shfl_up_sync(0xffffffffu, inclusive.sum, offset)};
        if (lane >= offset) inclusive = combine(up, inclusive);
    }
    if (lane == 31) s_warp[warp] = inclusive;
    __syncthreads();
    Carry before_warp = {0, 0.0f};
    for (int w = 0; w < warp; ++w) before_warp = combine(before_warp, s_warp[w]);
    Carry exclusive = {__shfl_up_sync(0xffffffffu, inclusive.ended, 1), __shfl_up_sync(0xffffffffu, inclusive.sum, 1)};
    if (lane == 0) exclusive = {0, 0.0f};
    exclusive = combine(before_warp, exclusive);

    if (first_row >= 0) y[first_row] = first_sum + exclusive.sum;
    if (threadIdx.x == THREADS - 1) {  // the tile's trailing sum belongs to row1, finished by a later tile
        Carry total = combine(before_warp, inclusive);
        carry_rows[tile] = row1;
        carry_sums[tile] = total.sum;
    }
}

__global__ void __launch_bounds__(THREADS)
    add_carries(const int* __restrict__ carry_rows, const float* __restrict__ carry_sums, float* __restrict__ y, int tiles,
                int rows) {
    int t = blockIdx.x * THREADS + threadIdx.x;
    int lane = threadIdx.x & 31;
    int row = t < tiles ? carry_rows[t] : INT_MAX;
    float sum = t < tiles ? carry_sums[t] : 0.0f;
    // tiles are in row order, so equal rows are neighbours: a segmented suffix sum
    // leaves each run's total in its first lane
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        float next_sum = __shfl_down_sync(0xffffffffu, sum, offset);
        int next_row = __shfl_down_sync(0xffffffffu, row, offset);
        if (lane + offset < 32 && next_row == row) sum += next_sum;
    }
    int previous_row = __shfl_up_sync(0xffffffffu, row, 1);
    bool first_of_run = lane == 0 || previous_row != row;
    if (first_of_run && row < rows) atomicAdd(y + row, sum);
}

// scratch kept between calls, grown when a larger matrix needs more tiles
static int* tile_rows_scratch = nullptr;
static int* carry_rows_scratch = nullptr;
static float* carry_sums_scratch = nullptr;
static int scratch_tiles = -1;

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    int tiles = (int)(((long long)rows + nnz + TILE - 1) / TILE);
    if (tiles > scratch_tiles) {
        cudaFree(tile_rows_scratch);
        cudaFree(carry_rows_scratch);
        cudaFree(carry_sums_scratch);
        cudaMalloc(&tile_rows_scratch, sizeof(int) * (tiles + 1));
        cudaMalloc(&carry_rows_scratch, sizeof(int) * tiles);
        cudaMalloc(&carry_sums_scratch, sizeof(float) * tiles);
        scratch_tiles = tiles;
    }
    int boundary_blocks = (int)((32LL * (tiles + 1) + THREADS - 1) / THREADS);
    partition_tiles<<<boundary_blocks, THREADS>>>(row_ptr, rows, nnz, tiles, tile_rows_scratch);
    spmv_tiles<<<tiles, THREADS>>>(row_ptr, col_idx, values, x, y, rows, nnz, tile_rows_scratch, carry_rows_scratch,
                                   carry_sums_scratch);
    add_carries<<<(tiles + THREADS - 1) / THREADS, THREADS>>>(carry_rows_scratch, carry_sums_scratch, y, tiles, rows);
}
