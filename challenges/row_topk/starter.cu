#include <cuda_runtime.h>

// Top k of every row of an int32 matrix. All pointers are device memory, row-major:
//   input   : [rows][cols]  read-only
//   values  : [rows][k]     values[r][j]  = the j-th largest key of row r
//   indices : [rows][k]     indices[r][j] = its column
// Order: key descending; equal keys by column ascending (the smaller column first).
// 1 <= k <= min(cols, 64), cols <= 16384. Launch your kernels here; scratch
// memory may be allocated (solve is called many times).
extern "C" void solve(const int* input, int* values, int* indices, int rows, int cols, int k) {}
