// expect: wrong_output
// Each thread accumulates its grid-stride share in a __half: 11 significant bits, overflows past 65504; the block partials are then added in float.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void sum_half(const float* in, float* out, int n) {
    __half acc = __float2half(0.0f);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc = __hadd(acc, __float2half(in[i]));
    float v = __half2float(acc);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

extern "C" void solve(const float* input, float* output, int N) {
    cudaMemset(output, 0, sizeof(float));
    sum_half<<<64, 256>>>(input, output, N);
}
