// expect: wrong_output
// float4 loads over N/4 vectors and no scalar epilogue: the last N % 4 elements are never added (N = 1, 2, 3 give 0).
#include <cuda_runtime.h>

__global__ void sum4(const float4* in, float* out, int n4) {
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 v = in[i];
        acc += v.x + v.y + v.z + v.w;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

extern "C" void solve(const float* input, float* output, int N) {
    cudaMemset(output, 0, sizeof(float));
    sum4<<<128, 256>>>((const float4*)input, output, N / 4);
}
