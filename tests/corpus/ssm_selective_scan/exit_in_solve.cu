// Ends the whole process from inside solve() with exit(3).
// Must be judged `exited` (status 3), and no other solution's result may be lost.
#include <cstdlib>
#include <cuda_runtime.h>

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    std::exit(3);
}
