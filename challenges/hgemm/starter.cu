#include <cuda_fp16.h>
#include <cuda_runtime.h>

// C = A * B with float32 accumulation. All pointers are device memory,
// row-major and contiguous:
//   A : [M][K] half    element (m,k) at m*K + k
//   B : [K][N] half    element (k,n) at k*N + n
//   C : [M][N] float   element (m,n) at m*N + n
// C[m][n] = sum over k of float(A[m][k]) * float(B[k][n]), summed in float32.
// Write every element of C; A and B are read-only. Launch your kernels here;
// scratch memory may be allocated.
extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {}
