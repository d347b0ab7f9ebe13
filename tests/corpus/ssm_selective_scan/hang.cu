// Never finishes: the kernel spins on a flag nothing sets.
// Must be judged `timeout`, naming the test it hung in.
#include <cuda_runtime.h>

__global__ void spin(volatile int* flag) { while (*flag == 0) { } }

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int* flag;
    cudaMalloc(&flag, sizeof(int));
    cudaMemset(flag, 0, sizeof(int));
    spin<<<1, 1>>>(flag);
    cudaDeviceSynchronize();
}
