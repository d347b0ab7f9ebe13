#include <cuda_runtime.h>

// Matrix transpose, float32. input is (rows, cols), output is (cols, rows),
// both row-major device memory:
//   output[c * rows + r] = input[r * cols + c]
// Write every element of output; the input is read-only. Launch your kernels
// here; scratch memory may be allocated.
extern "C" void solve(const float* input, float* output, int rows, int cols) {}
