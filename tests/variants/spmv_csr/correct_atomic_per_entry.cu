// expect: pass
// A different design: y zeroed by a kernel, then one thread per entry finds its row by binary search over row_ptr (the last r with row_ptr[r] <= k, which skips empty rows) and atomically adds its product; sums come out in any order, within the tolerance.
#include <cuda_runtime.h>

__global__ void zero(float* y, int rows) {
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) y[r] = 0.0f;
}

__global__ void add_entries(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y,
                            int rows, int nnz) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < nnz; k += gridDim.x * blockDim.x) {
        int lo = 0, hi = rows - 1;  // the last row whose start is <= k
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (row_ptr[mid] <= k) lo = mid; else hi = mid - 1;
        }
        atomicAdd(y + lo, values[k] * x[col_idx[k]]);
    }
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    zero<<<1024, 256>>>(y, rows);
    if (nnz > 0) add_entries<<<2048, 256>>>(row_ptr, col_idx, values, x, y, rows, nnz);
}
