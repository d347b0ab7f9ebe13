#include <cuda_runtime.h>

// C = A B in float32. All pointers are device memory, row-major:
//   A : (M, K), element (m, k) at m*K + k
//   B : (K, N), element (k, n) at k*N + n
//   C : (M, N), element (m, n) at m*N + n
// C[m, n] = sum over k of A[m, k] * B[k, n], accumulated in float32 (no TF32,
// no half precision). Write every element of C; the inputs are read-only.
// Launch your kernels here; scratch memory may be allocated.
extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {}
