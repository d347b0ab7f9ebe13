// expect: wrong_output
// Warp per row whose lanes keep their partial sums in half precision (to save registers or bandwidth on a later store): a partial near 100 has a spacing of 0.06 in half, so rows of a few thousand entries already miss by more than the tolerance.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void spmv(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (row >= rows) return;
    __half sum = __float2half(0.0f);
    for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += 32)
        sum = __float2half(__half2float(sum) + values[k] * x[col_idx[k]]);
    float total = __half2float(sum);
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_down_sync(0xffffffffu, total, offset);
    if (lane == 0) y[row] = total;
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {
    spmv<<<(int)((32LL * rows + 255) / 256), 256>>>(row_ptr, col_idx, values, x, y, rows);
}
