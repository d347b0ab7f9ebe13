// The obvious first attempt: one thread per row, summing its entries in order.
// Correct for every matrix, but neighbouring threads read entries a whole row
// apart (uncoalesced), and a row of 650,925 entries is one thread's work: the
// whole grid waits for it while nearly every other thread has long finished.
#include <cuda_runtime.h>

__global__ void spmv_thread_per_row(const int* row_ptr, const int* col_idx, const float* values, const float* x,
                                    float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float sum = 0.0f;
        for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) sum += values[k] * x[col_idx[k]];
        y[r] = sum;
    }
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    spmv_thread_per_row<<<(rows + 255) / 256, 256>>>(row_ptr, col_idx, values, x, y, rows);
}
