// Device printf from one thread per block.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void hello(int tag) {
    if (threadIdx.x == 0) printf("block %d of %d says %d (%.2f)\n", blockIdx.x, gridDim.x, tag, tag * 0.5f);
}

extern "C" void solve(int tag) {
    hello<<<3, 32>>>(tag);
    cudaDeviceSynchronize();
}
