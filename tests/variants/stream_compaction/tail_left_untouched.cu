// expect: unwritten_output
// Writes the kept elements and the count but leaves output[count .. N) as it found it: the spec asks for zeros there, and the harness's marker values stay.
#include <cuda_runtime.h>

constexpr int BLOCK = 1024;

__global__ void count_blocks(const float* in, int* block_counts, int n) {
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    int c = __syncthreads_count(i < n && in[i] > 0.0f);
    if (threadIdx.x == 0) block_counts[blockIdx.x] = c;
}

__global__ void offsets(int* block_counts, int blocks, int* count) {
    int running = 0;
    for (int b = 0; b < blocks; ++b) {
        int c = block_counts[b];
        block_counts[b] = running;
        running += c;
    }
    *count = running;
}

__global__ void scatter(const float* in, float* out, const int* block_offsets, const int* count, int n) {
    __shared__ int warp_counts[BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    float x = i < n ? in[i] : -1.0f;
    bool keep = i < n && x > 0.0f;
    unsigned ballot = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int slot = block_offsets[blockIdx.x];
    for (int w = 0; w < warp; ++w) slot += warp_counts[w];
    if (keep) out[slot + __popc(ballot & ((1u << lane) - 1u))] = x;
    
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    static int* block_counts = nullptr;
    static int capacity = 0;
    int n = N;
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks < 1) blocks = 1;
    if (blocks > capacity) {
        if (block_counts) cudaFree(block_counts);
        cudaMalloc(&block_counts, blocks * sizeof(int));
        capacity = blocks;
    }
    count_blocks<<<blocks, BLOCK>>>(input, block_counts, n);
    offsets<<<1, 1>>>(block_counts, blocks, count);
    scatter<<<blocks, BLOCK>>>(input, output, block_counts, count, n);
    
}
