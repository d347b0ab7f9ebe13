#include <cuda_runtime.h>

// Row-wise softmax, float32. input and output are device memory, row-major
// (rows, cols): element (r, c) at r*cols + c.
//   output[r, c] = exp(input[r, c] - m[r]) / sum over c' of exp(input[r, c'] - m[r]),
//   with m[r] the maximum of row r (logits can be in the hundreds: shift by it).
// Write every element of output; the input is read-only. Launch your kernels
// here; scratch memory may be allocated.
extern "C" void solve(const float* input, float* output, int rows, int cols) {}
