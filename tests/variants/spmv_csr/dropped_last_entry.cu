// expect: wrong_output
// Reads row_ptr[r + 1] as the row's last entry instead of one past it, so the last entry of every row is left out: each nonempty row is off by that entry's product, at least 0.25 with these values.
#include <cuda_runtime.h>

__global__ void spmv(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float sum = 0.0f;
        for (int k = row_ptr[r]; k < row_ptr[r + 1] - 1; ++k) sum += values[k] * x[col_idx[k]];
        y[r] = sum;
    }
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    spmv<<<(rows + 255) / 256, 256>>>(row_ptr, col_idx, values, x, y, rows);
}
