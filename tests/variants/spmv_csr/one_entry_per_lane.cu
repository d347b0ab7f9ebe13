// expect: wrong_output
// Warp per row where each lane takes one entry (begin + lane) and no loop: right while rows have at most 32 entries, every entry past the 32nd of a longer row is dropped.
#include <cuda_runtime.h>

__global__ void spmv(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (row >= rows) return;
    int k = row_ptr[row] + lane;
    float sum = k < row_ptr[row + 1] ? values[k] * x[col_idx[k]] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[row] = sum;
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    spmv<<<(int)((32LL * rows + 255) / 256), 256>>>(row_ptr, col_idx, values, x, y, rows);
}
