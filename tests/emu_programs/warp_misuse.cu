// Bug: a full-mask shuffle that lanes 16..31 never reach (they wait at a barrier).
#include <cuda_runtime.h>

__global__ void broken(int* x) {
    int t = threadIdx.x;
    int v = x[t];
    if (t < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
    __syncthreads();
    x[t] = v;
}

extern "C" void solve(int* x) {
    broken<<<1, 32>>>(x);
    cudaDeviceSynchronize();
}
