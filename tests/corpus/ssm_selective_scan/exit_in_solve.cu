// Ends the whole process from inside solve().
#include <cstdlib>
#include <cuda_runtime.h>

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    std::exit(3);
}
