// expect: unwritten_output
// Warp per row that returns early for an empty row to save work, and so never writes its y (which must be 0): the output keeps whatever was there.
#include <cuda_runtime.h>

__global__ void spmv(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (row >= rows) return;
    int begin = row_ptr[row], end = row_ptr[row + 1];
    if (begin == end) return;
    float sum = 0.0f;
    for (int k = begin + lane; k < end; k += 32) sum += values[k] * x[col_idx[k]];
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[row] = sum;
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    spmv<<<(int)((32LL * rows + 255) / 256), 256>>>(row_ptr, col_idx, values, x, y, rows);
}
