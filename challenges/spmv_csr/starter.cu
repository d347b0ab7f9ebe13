#include <cuda_runtime.h>

// y = A x, A a rows x cols sparse matrix in CSR form. All pointers are device memory:
//   row_ptr : [rows + 1]  row r's entries are k = row_ptr[r] .. row_ptr[r+1]-1;
//                         row_ptr[0] = 0, non-decreasing, row_ptr[rows] = nnz (empty rows allowed)
//   col_idx : [nnz]       column of entry k, in [0, cols); any order within a row, repeats allowed
//   values  : [nnz]       value of entry k
//   x       : [cols]
//   y       : [rows]      y[r] = sum over the row's entries of values[k] * x[col_idx[k]]; 0 for an empty row
// Write every y[r]. Launch your kernels here; scratch memory may be allocated.
extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                      int cols, int nnz) {}
