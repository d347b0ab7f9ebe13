#include <cuda_runtime.h>

// Inclusive prefix sum (scan) of N float32 numbers. All pointers are device memory:
//   input  : [N]  read-only
//   output : [N]  output[i] = input[0] + input[1] + ... + input[i]
// Write every element of output. Launch your kernels here; scratch memory may
// be allocated (solve is called many times: keep it, and reset what needs it).
extern "C" void solve(const float* input, float* output, int N) {}
