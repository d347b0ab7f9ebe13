// expect: wrong_output
// Scans each 1024-element block on its own and never adds the totals of the blocks before it: right for N <= 1024, wrong from the second block on.
#include <cuda_runtime.h>

#define T 1024

__global__ void block_scan(const float* in, float* out, int n) {
    __shared__ float s[T];
    int i = blockIdx.x * T + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < T; d *= 2) {
        float v = threadIdx.x >= d ? s[threadIdx.x - d] : 0.0f;
        __syncthreads();
        s[threadIdx.x] += v;
        __syncthreads();
    }
    if (i < n) out[i] = s[threadIdx.x];
}

extern "C" void solve(const float* input, float* output, int N) {
    block_scan<<<(N + T - 1) / T, T>>>(input, output, N);
}
