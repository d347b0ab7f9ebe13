#include <cuda_runtime.h>

// Causal depthwise 1-D convolution, float32. All pointers are device memory:
//   x      : [batch, seq_len, channels] channels-last, (b, t, c) at (b*seq_len + t)*channels + c, read-only
//   weight : [channels, width], (c, k) at c*width + k, read-only
//   bias   : [channels], read-only
//   y      : [batch, seq_len, channels], same layout as x
//   y[b, t, c] = bias[c] + sum over k < width of weight[c, k] * x[b, t - (width-1) + k, c],
//   with x[b, t', c] = 0 for t' < 0 (each sequence starts from zeros, not from the previous batch).
// 1 <= width <= 4. Write every element of y. Launch your kernels here; scratch
// memory may be allocated.
extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {}
