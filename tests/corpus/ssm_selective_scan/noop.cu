// A no-op: solve() returns without touching y, hoping stale memory holds an answer.
// Must be judged `unwritten_output` (y is poisoned with a marked NaN before every call).
#include <cuda_runtime.h>

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {}
