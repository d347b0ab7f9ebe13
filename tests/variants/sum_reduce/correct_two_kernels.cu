// expect: pass
// Two launches: per-block sums (grid-stride, shared-memory tree) into a cudaMalloc'd scratch kept across calls, then one block sums the partials; no atomics at all.
#include <cuda_runtime.h>

#define BLOCKS 512
#define THREADS 512

__global__ void partial_sums(const float* in, float* partials, int n) {
    __shared__ float s[THREADS];
    float acc = 0.0f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += BLOCKS * THREADS) acc += in[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

__global__ void final_sum(const float* partials, float* out) {
    __shared__ float s[BLOCKS];
    s[threadIdx.x] = partials[threadIdx.x];
    __syncthreads();
    for (int w = BLOCKS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = s[0];
}

extern "C" void solve(const float* input, float* output, int N) {
    static float* partials = nullptr;
    if (!partials) cudaMalloc(&partials, BLOCKS * sizeof(float));
    partial_sums<<<BLOCKS, THREADS>>>(input, partials, N);
    final_sum<<<1, BLOCKS>>>(partials, output);
}
