#include <cuda_runtime.h>

// Embedding gather. All pointers are device memory, row-major:
//   indices : [num_indices]         read-only, every index in [0, vocab)
//   table   : [vocab, dim]          read-only, row r at table + r*dim
//   output  : [num_indices, dim]    output[i, :] = table[indices[i], :]
// dim need not be a multiple of 4. Launch your kernels here; scratch memory may be allocated.
extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {}
