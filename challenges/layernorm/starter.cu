#include <cuda_runtime.h>

// Layer normalisation, float32. input and output are device memory, row-major
// (rows, cols): element (r, c) at r*cols + c; gamma and beta have cols elements.
//   mean[r]      = (1/cols) * sum over c of input[r, c]
//   var[r]       = (1/cols) * sum over c of (input[r, c] - mean[r])^2   (biased)
//   output[r, c] = (input[r, c] - mean[r]) / sqrt(var[r] + 1e-5) * gamma[c] + beta[c]
// Rows can sit hundreds of standard deviations from zero: E[x^2] - E[x]^2
// cancels catastrophically there. Write every element of output; the inputs
// are read-only. Launch your kernels here; scratch memory may be allocated.
extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {}
