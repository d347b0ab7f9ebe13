// Crashes the host process: solve() writes through a null pointer.
// Must be judged `crash` (SIGSEGV) on both backends.
#include <cuda_runtime.h>

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    volatile float* nowhere = nullptr;
    *nowhere = 1.0f;
}
