#include <cuda_runtime.h>

// The textbook three kernels, one element per thread:
//  1. every block of 1024 threads counts its elements > 0 (a tree sum of the
//     keep flags in shared memory) and writes the count;
//  2. one thread turns the block counts into block offsets, in order, and
//     writes the total into count;
//  3. every block scans its keep flags (Hillis-Steele in shared memory:
//     log2(1024) = 10 steps) and writes each kept element to its block's
//     offset plus its rank; every index at or past the total gets a zero.
// The input is read twice and one thread walks all N/1024 block counts.
constexpr int B = 1024;

__global__ void count_blocks(const float* in, int* block_counts, int n) {
    __shared__ int s[B];
    int i = blockIdx.x * B + threadIdx.x;
    s[threadIdx.x] = i < n && in[i] > 0.0f;
    __syncthreads();
    for (int d = B / 2; d > 0; d /= 2) {
        if (threadIdx.x < d) s[threadIdx.x] += s[threadIdx.x + d];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_counts[blockIdx.x] = s[0];
}

__global__ void offsets_in_order(int* block_counts, int blocks, int* count) {
    int running = 0;
    for (int b = 0; b < blocks; ++b) {
        int c = block_counts[b];
        block_counts[b] = running;
        running += c;
    }
    *count = running;
}

__global__ void scatter(const float* in, float* out, const int* block_offsets, const int* count, int n) {
    __shared__ int s[2][B];
    int i = blockIdx.x * B + threadIdx.x;
    float x = i < n ? in[i] : 0.0f;
    int cur = 0;
    s[cur][threadIdx.x] = x > 0.0f;
    __syncthreads();
    for (int d = 1; d < B; d *= 2) {
        int v = s[cur][threadIdx.x];
        if (threadIdx.x >= d) v += s[cur][threadIdx.x - d];
        s[1 - cur][threadIdx.x] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (x > 0.0f) out[block_offsets[blockIdx.x] + s[cur][threadIdx.x] - 1] = x;
    if (i < n && i >= *count) out[i] = 0.0f;  // past the kept elements: no kept element lands here
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    static int* block_counts = nullptr;
    static int capacity = 0;
    int blocks = (N + B - 1) / B;
    if (blocks > capacity) {
        if (block_counts) cudaFree(block_counts);
        cudaMalloc(&block_counts, blocks * sizeof(int));
        capacity = blocks;
    }
    count_blocks<<<blocks, B>>>(input, block_counts, N);
    offsets_in_order<<<1, 1>>>(block_counts, blocks, count);
    scatter<<<blocks, B>>>(input, output, block_counts, count, N);
}
