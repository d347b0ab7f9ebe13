// expect: pass
// Independent design: output zeroed by cudaMemsetAsync first, then one pass where each block takes the next tile by an atomic ticket, ranks its kept elements with __syncthreads_count and warp ballots, waits for the previous tile's running total (a chain, no look-back) and scatters straight to global memory.
#include <cuda_runtime.h>

constexpr int BLOCK = 512;

__global__ void compact_chain(const float* in, float* out, int* count, int n, unsigned* ticket, unsigned long long* totals,
                              unsigned epoch, int tiles) {
    __shared__ unsigned tile;
    __shared__ int warp_counts[BLOCK / 32];
    __shared__ int before;
    if (threadIdx.x == 0) tile = atomicAdd(ticket, 1u);
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long i = (long long)tile * BLOCK + threadIdx.x;
    const float x = i < n ? in[i] : -1.0f;
    const unsigned ballot = __ballot_sync(0xffffffffu, x > 0.0f);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    const int tile_count = __syncthreads_count(x > 0.0f);
    if (threadIdx.x == 0) {
        unsigned long long previous = 0;
        if (tile > 0) {
            volatile unsigned long long* p = totals + tile - 1;
            do previous = *p; while ((previous >> 32) != epoch);
        }
        unsigned running = (unsigned)previous + tile_count;
        __threadfence();
        *(volatile unsigned long long*)(totals + tile) = ((unsigned long long)epoch << 32) | running;
        if ((int)tile == tiles - 1) *count = (int)running;
        before = (int)(unsigned)previous;
    }
    __syncthreads();
    int slot = before;
    for (int w = 0; w < warp; ++w) slot += warp_counts[w];
    if (x > 0.0f) out[slot + __popc(ballot & ((1u << lane) - 1u))] = x;
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    static unsigned* ticket = nullptr;
    static unsigned long long* totals = nullptr;
    static int capacity = 0;
    static unsigned epoch = 0;
    int tiles = (N + BLOCK - 1) / BLOCK;
    if (!ticket) cudaMalloc(&ticket, sizeof(unsigned));
    if (tiles > capacity) {
        if (totals) cudaFree(totals);
        cudaMalloc(&totals, tiles * sizeof(unsigned long long));
        cudaMemset(totals, 0, tiles * sizeof(unsigned long long));
        capacity = tiles;
    }
    epoch += 1;  // a word of an earlier call never matches
    cudaMemsetAsync(ticket, 0, sizeof(unsigned));
    cudaMemsetAsync(output, 0, (size_t)N * sizeof(float));
    compact_chain<<<tiles, BLOCK>>>(input, output, count, N, ticket, totals, epoch, tiles);
}
