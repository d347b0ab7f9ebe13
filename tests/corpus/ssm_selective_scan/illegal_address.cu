// A kernel writes to an address no allocation owns. Must be judged `cuda_error`
// (cudaErrorIllegalAddress) on a GPU, `crash` (SIGSEGV) on emu where it is a wild CPU write.
#include <cuda_runtime.h>

__global__ void scribble(float* target) { target[threadIdx.x] = 1.0f; }

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    scribble<<<1, 32>>>(reinterpret_cast<float*>(0x10));
}
