// expect: wrong_output
// Every block stores its partial sum into output[0] instead of adding it: the last block to write wins, the other blocks' elements are lost.
#include <cuda_runtime.h>

__global__ void block_sum(const float* in, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = s[0];
}

extern "C" void solve(const float* input, float* output, int N) {
    block_sum<<<(N + 255) / 256, 256>>>(input, output, N);
}
