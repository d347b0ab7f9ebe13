// expect: wrong_output
// Computes the exclusive scan (output[i] = sum of input[0..i-1]) instead of the inclusive one: every element is off by input[i], at least 0.5.
#include <cuda_runtime.h>

#define T 1024

__global__ void excl(const float* in, float* out, float* totals, int n) {
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
    float inclusive = s[threadIdx.x];
    float value = i < n ? in[i] : 0.0f;
    if (i < n) out[i] = inclusive - value;  // the mistake: exclusive
    if (threadIdx.x == T - 1) totals[blockIdx.x] = inclusive;
}

__global__ void carry(float* totals, int blocks) {
    float run = 0.0f;
    for (int b = 0; b < blocks; ++b) { float t = totals[b]; totals[b] = run; run += t; }
}

__global__ void add(float* out, const float* offsets, int n) {
    int i = blockIdx.x * T + threadIdx.x;
    if (i < n) out[i] += offsets[blockIdx.x];
}

extern "C" void solve(const float* input, float* output, int N) {
    static float* totals = nullptr;
    static int cap = 0;
    int blocks = (N + T - 1) / T;
    if (blocks > cap) { cudaFree(totals); cudaMalloc(&totals, blocks * sizeof(float)); cap = blocks; }
    excl<<<blocks, T>>>(input, output, totals, N);
    carry<<<1, 1>>>(totals, blocks);
    add<<<blocks, T>>>(output, totals, N);
}
