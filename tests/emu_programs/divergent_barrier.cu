// Bug: a barrier inside a branch that half of the block skips (deadlock).
#include <cuda_runtime.h>

__global__ void broken(float* x) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 128 + t];
    if (t < 64) {
        s[t] += s[t + 64];
        __syncthreads();
    }
    __syncthreads();
    x[blockIdx.x * 128 + t] = s[t];
}

extern "C" void solve(float* x) {
    broken<<<2, 128>>>(x);
    cudaDeviceSynchronize();
}
