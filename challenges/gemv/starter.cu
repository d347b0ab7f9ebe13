#include <cuda_runtime.h>

// Matrix-vector product, float32. All pointers are device memory:
//   A : [M, N] row-major, element (i, j) at i*N + j, read-only
//   x : [N]    read-only
//   y : [M]    y[i] = sum over j of A[i, j] * x[j]
// Write every element of y (it holds garbage on entry). Launch your kernels
// here; scratch memory may be allocated.
extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {}
