// The classic "vector" CSR kernel: one warp per row. The 32 lanes read 32
// consecutive entries at a time (coalesced), each keeps a partial sum, and a
// shuffle tree adds the partials. Near the memory floor when rows are a few
// dozen entries or more and similar in length; it still gives a whole row to
// one warp, so on the power-law matrix the 650,925-entry row takes ~20,000
// dependent steps of one warp after the rest of the grid is done, and the
// lanes of the many short rows (and the warps of empty rows) do nothing.
#include <cuda_runtime.h>

__global__ void spmv_warp_per_row(const int* row_ptr, const int* col_idx, const float* values, const float* x,
                                  float* y, int rows) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= rows) return;  // the whole warp leaves together
    int begin = row_ptr[warp], end = row_ptr[warp + 1];
    float sum = 0.0f;
    for (int k = begin + lane; k < end; k += 32) sum += values[k] * __ldg(x + col_idx[k]);
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[warp] = sum;
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    long long threads = 32LL * rows;
    spmv_warp_per_row<<<(unsigned)((threads + 255) / 256), 256>>>(row_ptr, col_idx, values, x, y, rows);
}
