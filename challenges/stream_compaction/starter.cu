#include <cuda_runtime.h>

// Stream compaction of N float32 numbers. All pointers are device memory:
//   input  : [N]  read-only
//   output : [N]  output[0 .. count-1] = the elements with input[i] > 0, in order of i;
//                 output[count .. N-1] = 0.0f (every element must be written)
//   count  : [1]  count[0] = the number of elements with input[i] > 0
// Launch your kernels here; scratch memory may be allocated (solve is called
// many times: keep it, and reset what needs it).
extern "C" void solve(const float* input, float* output, int* count, int N) {}
