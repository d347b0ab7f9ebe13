#include <cuda_runtime.h>

// The textbook three-phase scan, applied recursively:
//  1. every block of 1024 threads scans its 1024 elements in shared memory
//     (Hillis-Steele: log2(1024) = 10 steps, each adding the value d places
//     back) and writes its total to a block-sums array;
//  2. the block sums are scanned the same way (recursively, until one block
//     holds them all);
//  3. every block adds the scanned sum of the blocks before it.
// Scratch for each level is allocated once and kept for later calls.
constexpr int B = 1024;

__global__ void block_scan(const float* in, float* out, float* sums, int n) {
    __shared__ float s[2][B];
    int i = blockIdx.x * B + threadIdx.x;
    int cur = 0;
    s[cur][threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < B; d *= 2) {
        float v = s[cur][threadIdx.x];
        if (threadIdx.x >= d) v += s[cur][threadIdx.x - d];
        s[1 - cur][threadIdx.x] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) out[i] = s[cur][threadIdx.x];
    if (sums && threadIdx.x == B - 1) sums[blockIdx.x] = s[cur][B - 1];
}

__global__ void add_offsets(float* out, const float* scanned_sums, int n) {
    int i = blockIdx.x * B + threadIdx.x;
    if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}

static float* level_scratch[4];  // 2^25 / 1024^3 < 1: three levels suffice
static int level_capacity[4];

static void scan(const float* in, float* out, int n, int level) {
    int blocks = (n + B - 1) / B;
    if (blocks == 1) {
        block_scan<<<1, B>>>(in, out, nullptr, n);
        return;
    }
    if (level_capacity[level] < blocks) {
        if (level_scratch[level]) cudaFree(level_scratch[level]);
        cudaMalloc(&level_scratch[level], blocks * sizeof(float));
        level_capacity[level] = blocks;
    }
    float* sums = level_scratch[level];
    block_scan<<<blocks, B>>>(in, out, sums, n);
    scan(sums, sums, blocks, level + 1);  // in place: each block reads its elements before writing them
    add_offsets<<<blocks, B>>>(out, sums, n);
}

extern "C" void solve(const float* input, float* output, int N) { scan(input, output, N, 0); }
