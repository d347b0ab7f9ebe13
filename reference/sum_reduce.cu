#include <cuda_runtime.h>
#include <stdint.h>

// sum_reduce reference: one pass over the input, one launch, deterministic.
//
// Floor: 4N bytes read once (268 MB at the official N = 2^26), ~67 us at
// 4 TB/s. To get there every SM needs ~30+ KB of loads in flight (Little's
// law at ~1 us DRAM latency): each thread keeps UNROLL = 4 independent float4
// loads outstanding (64 bytes) and the grid is BLOCKS_PER_SM resident blocks
// of 256 threads on every SM (8 * 256 * 64 B = 128 KB per SM), walking the
// input with a grid-stride loop. Each float4 lane accumulates into its own
// register (16 partial sums per thread), so the adds do not form one long
// dependent chain and each partial sums ~N/(grid threads * 16) elements.
//
// Combining: warp shuffle tree, then the block's warps through shared memory,
// then the block partial goes to a static scratch array; the last block to
// finish (atomicAdd on a counter after a __threadfence) adds the partials in
// block order and writes output[0]. No atomics on floats and no memset: the
// result is the same bits on every call, whatever order the blocks finish in,
// and the output is written exactly once. The last block resets the counter,
// so the next call (same or other buffers) starts clean.

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int UNROLL = 4;
constexpr int BLOCKS_PER_SM = 8;
constexpr int MAX_BLOCKS = 4096;

__device__ float block_partials[MAX_BLOCKS];
__device__ unsigned int blocks_done = 0;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// The sum of v over the block, valid in thread 0.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_partials[WARPS];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) warp_partials[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.0f;
    if (threadIdx.x < 32) {
        total = threadIdx.x < WARPS ? warp_partials[threadIdx.x] : 0.0f;
        total = warp_sum(total);
    }
    return total;
}

__global__ void __launch_bounds__(THREADS) sum_kernel(const float* __restrict__ input, float* __restrict__ output,
                                                      int N, bool vectorized) {
    const int tid = blockIdx.x * THREADS + threadIdx.x;
    const int stride = gridDim.x * THREADS;
    float acc = 0.0f;
    if (vectorized) {
        const float4* in4 = reinterpret_cast<const float4*>(input);
        const int n4 = N / 4;
        float4 s[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) s[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        int i = tid;
        for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) v[k] = __ldcs(in4 + i + k * stride);
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                s[k].x += v[k].x; s[k].y += v[k].y; s[k].z += v[k].z; s[k].w += v[k].w;
            }
        }
        for (; i < n4; i += stride) {
            float4 v = __ldcs(in4 + i);
            s[0].x += v.x; s[0].y += v.y; s[0].z += v.z; s[0].w += v.w;
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc += (s[k].x + s[k].y) + (s[k].z + s[k].w);
        if (tid < N - 4 * n4) acc += input[4 * n4 + tid];  // the last N % 4 elements
    } else {
        for (int i = tid; i < N; i += stride) acc += input[i];
    }

    float total = block_sum(acc);
    __shared__ bool last_block;
    if (threadIdx.x == 0) {
        block_partials[blockIdx.x] = total;
        __threadfence();  // the partial is visible device-wide before the count says so
        last_block = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) return;

    // Every other block's partial is visible (their fences precede their counts).
    __threadfence();
    float v = 0.0f;
    for (int b = threadIdx.x; b < gridDim.x; b += THREADS) v += __ldcg(block_partials + b);
    v = block_sum(v);
    if (threadIdx.x == 0) {
        output[0] = v;
        blocks_done = 0;  // ready for the next call
    }
}

extern "C" void solve(const float* input, float* output, int N) {
    static int sms = 0;
    if (sms == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (sms <= 0) sms = 1;
    }
    bool vectorized = ((uintptr_t)input & 15) == 0;
    int per_thread = vectorized ? 4 * UNROLL : 1;  // elements one grid-stride step takes per thread
    int needed = (N + THREADS * per_thread - 1) / (THREADS * per_thread);
    int blocks = sms * BLOCKS_PER_SM;
    if (blocks > needed) blocks = needed;  // small N: no block without work
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    if (blocks < 1) blocks = 1;
    sum_kernel<<<blocks, THREADS>>>(input, output, N, vectorized);
}
