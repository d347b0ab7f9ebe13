// Bug: the bounds check is off by one, so the last thread writes past the end.
#include <cuda_runtime.h>

__global__ void scale(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = 2.0f * in[i < n ? i : 0];
    }
}

extern "C" void solve(const float* in, float* out, int n) {
    scale<<<(n + 64) / 64, 64>>>(in, out, n);
    cudaDeviceSynchronize();
}
