#include <cuda_runtime.h>

// The textbook first version: one element per thread, a tree in shared
// memory halving the active threads each step, and one atomicAdd per block
// into the output, which is zeroed first (it holds garbage on entry).
constexpr int THREADS = 256;

__global__ void block_sum(const float* input, float* output, int N) {
    __shared__ float s[THREADS];
    int i = blockIdx.x * THREADS + threadIdx.x;
    s[threadIdx.x] = i < N ? input[i] : 0.0f;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(output, s[0]);
}

extern "C" void solve(const float* input, float* output, int N) {
    cudaMemset(output, 0, sizeof(float));
    block_sum<<<(N + THREADS - 1) / THREADS, THREADS>>>(input, output, N);
}
