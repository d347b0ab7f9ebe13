#include <cuda_fp16.h>
#include <cuda_runtime.h>

// Causal attention forward. All pointers are device memory, row-major and
// contiguous, every array of shape [batch][heads][seq_len][head_dim]:
//   element (b,h,i,d) at ((b*heads + h)*seq_len + i)*head_dim + d
// For every (b, h) and query i, over keys j = 0..i:
//   s_j = sum_d Q[b,h,i,d] * K[b,h,j,d] / sqrt(head_dim)
//   O[b,h,i,:] = sum_j softmax(s)_j * V[b,h,j,:]     (softmax over j = 0..i)
// head_dim is 64 or 128. Keep the softmax statistics in float32.
// Write every element of O; Q, K, V are read-only. Launch your kernels here;
// scratch memory may be allocated.
extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int batch, int heads, int seq_len,
                      int head_dim) {}
