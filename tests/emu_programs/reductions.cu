// Dynamic shared memory, block reductions (tree + warp shuffles), early return
// before a barrier, __syncthreads_count/and/or, cudaMalloc scratch inside solve.
#include <cuda_runtime.h>

__inline__ __device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Pass 1: one partial sum per block, tree reduction in dynamic shared memory.
__global__ void partial_sums(const float* x, float* partial, int n) {
    extern __shared__ float sdata[];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0.0f;
    if (i < n) v += x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    sdata[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (t < s) sdata[t] += sdata[t + s];
        __syncthreads();
    }
    if (t < 32) {
        float w = sdata[t] + sdata[t + 32];
        w = warp_sum(w);
        if (t == 0) partial[blockIdx.x] = w;
    }
}

// Pass 2: a single block sums the partials (warp sums staged in static shared).
__global__ void final_sum(const float* partial, float* out, int n) {
    __shared__ float warp_totals[32];
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += partial[i];
    v = warp_sum(v);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? warp_totals[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) *out = v;
    }
}

// Threads past n return before the barrier: exited threads count as arrived.
__global__ void early_exit_max(const int* x, int* block_max, int* counts, int n) {
    extern __shared__ int smax[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    smax[threadIdx.x] = x[i];
    int positives = __syncthreads_count(x[i] > 0);
    int all_small = __syncthreads_and(x[i] < 1000);
    int any_big = __syncthreads_or(x[i] > 90);
    if (threadIdx.x == 0) {
        int live = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
        int m = smax[0];
        for (int k = 1; k < live; k++) m = max(m, smax[k]);
        block_max[blockIdx.x] = m;
        counts[3 * blockIdx.x + 0] = positives;
        counts[3 * blockIdx.x + 1] = all_small;
        counts[3 * blockIdx.x + 2] = any_big;
    }
}

extern "C" void solve(const float* x, float* total, int n, const int* xi, int* block_max, int* counts, int ni) {
    const int threads = 256;
    int blocks = (n + 2 * threads - 1) / (2 * threads);
    float* partial = nullptr;
    cudaMalloc(&partial, blocks * sizeof(float));
    partial_sums<<<blocks, threads, threads * sizeof(float)>>>(x, partial, n);
    final_sum<<<1, 512>>>(partial, total, blocks);
    cudaFree(partial);
    early_exit_max<<<(ni + 127) / 128, 128, 128 * sizeof(int)>>>(xi, block_max, counts, ni);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) total[0] = -1.0f;
    cudaDeviceSynchronize();
}
