// Launches with thread block clusters (a launch attribute), which emu refuses.
#include <cuda_runtime.h>

__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }

extern "C" void solve(float* x) {
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = 2;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(2);
    config.blockDim = dim3(32);
    config.attrs = attribute;
    config.numAttrs = 1;
    cudaLaunchKernelEx(&config, twice, x);
}
