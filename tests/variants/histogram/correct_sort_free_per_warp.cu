// expect: pass
// One private histogram per warp in shared memory when it fits (fewer threads per counter), global atomics otherwise; counters zeroed by a kernel, not a memset.
#include <cuda_runtime.h>

#define THREADS 128
#define WARPS (THREADS / 32)
#define PER_WARP_MAX 2048

__global__ void zero(int* h, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) h[i] = 0;
}

__global__ void per_warp(const int* in, int* h, int n, int bins) {
    __shared__ int local[WARPS * PER_WARP_MAX];
    for (int i = threadIdx.x; i < WARPS * bins; i += THREADS) local[i] = 0;
    __syncthreads();
    int* mine = local + (threadIdx.x / 32) * bins;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS) atomicAdd(mine + in[i], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += THREADS) {
        int s = 0;
        for (int w = 0; w < WARPS; ++w) s += local[w * bins + b];
        if (s) atomicAdd(h + b, s);
    }
}

__global__ void direct(const int* in, int* h, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(h + in[i], 1);
}

extern "C" void solve(const int* input, int* histogram, int N, int num_bins) {
    zero<<<256, 256>>>(histogram, num_bins);
    if (num_bins <= PER_WARP_MAX)
        per_warp<<<264, THREADS>>>(input, histogram, N, num_bins);
    else
        direct<<<264, 256>>>(input, histogram, N);
}
