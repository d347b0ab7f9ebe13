// Named barriers (inline PTX bar.sync / bar.arrive) as warp-specialized kernels use them: in each
// block of 4 warps, warp 0 produces tiles of 96 floats into a ring of two stages in shared memory
// and warps 1..3 consume them, the two sides handing each stage over with a FULL and an EMPTY
// barrier of 128 threads (the producer arrives on FULL and waits on EMPTY, the consumers the
// other way round). Block b, tile i, consumer c (0..95):
//   out[(b * tiles + i) * 96 + c] = in[(b * tiles + i) * 96 + (c + 7 * i) % 96] + sum[b * tiles + i]
// where sum is the tile's total, added by warp 1 alone and handed to the other consumer warps by
// a barrier of the 96 consumers (no count given on a second barrier would also wait for warp 0).
// Then every thread meets at `barrier.sync 5` (no count: the whole block) from two call sites,
// and the block's last value goes to tail[b]. `bug` selects a misuse for the error tests:
//   1 barrier id 16; 2 a count of 48; 3 one phase given counts of 64 and 128;
//   4 the consumers wait for a FULL arrival that never comes; 5 warp 0 arrives twice in one phase.
// `bug` 6 is no misuse: lanes 16..31 of warp 0 exit, its other 16 lanes arrive at a barrier of 64
// threads and warp 1 waits there; a warp counts 32 once its non-exited lanes have arrived, so the
// barrier completes and warp 1 stores 1 in tail[b].
#include <cuda_runtime.h>

namespace {

constexpr int TILE = 96, STAGES = 2, FULL = 1, EMPTY = 3, SUM = 6, TAIL = 5;

__device__ __forceinline__ void bar_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__global__ void pipeline(const float* in, float* out, float* tail, int tiles, int bug) {
    __shared__ float ring[STAGES][TILE];
    __shared__ float total[STAGES];
    __shared__ float last;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float* src = in + (size_t)blockIdx.x * tiles * TILE;
    float* dst = out + (size_t)blockIdx.x * tiles * TILE;
    if (bug == 1 && threadIdx.x == 0) bar_arrive(16, 32);
    if (bug == 2) bar_sync(2, 48);
    if (bug == 3) {
        if (warp == 0) bar_arrive(2, 64);
        if (warp == 1) bar_sync(2, 128);
        return;
    }
    if (bug == 6) {
        if (warp == 0 && lane >= 16) return;
        if (warp == 0) bar_arrive(2, 64);
        if (warp == 1) {
            bar_sync(2, 64);
            if (lane == 0) tail[blockIdx.x] = 1.f;
        }
        return;
    }
    if (bug == 5 && warp == 0) {
        bar_arrive(2, 64);
        bar_arrive(2, 64);
        return;
    }
    if (warp == 0) {  // producer
        if (bug == 4) return;
        for (int i = 0; i < tiles; ++i) {
            const int s = i % STAGES;
            if (i >= STAGES) bar_sync(EMPTY + s, 128);  // the consumers are done with tile i - 2
            for (int k = lane; k < TILE; k += 32) ring[s][k] = src[i * TILE + k];
            bar_arrive(FULL + s, 128);
        }
    } else {  // consumers
        const int c = threadIdx.x - 32;
        for (int i = 0; i < tiles; ++i) {
            const int s = i % STAGES;
            bar_sync(FULL + s, 128);
            if (warp == 1) {
                float v = 0.f;
                for (int k = lane; k < TILE; k += 32) v += ring[s][k];
                for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                if (lane == 0) total[s] = v;
            }
            asm volatile("barrier.sync.aligned %0, 96;" ::"n"(SUM) : "memory");  // total[s] is written
            const float value = ring[s][(c + 7 * i) % TILE] + total[s];
            dst[i * TILE + c] = value;
            if (i == tiles - 1 && c == TILE - 1) last = value;
            // every consumer has read total[s] before warp 1 writes it again two tiles on
            asm volatile("barrier.sync.aligned %0, 96;" ::"n"(SUM) : "memory");
            if (i + STAGES < tiles) bar_arrive(EMPTY + s, 128);  // the producer may refill stage s
        }
    }
    if (warp == 0)
        asm volatile("barrier.sync %0;" ::"n"(TAIL) : "memory");
    else
        asm volatile("barrier.cta.sync.aligned %0;" ::"n"(TAIL) : "memory");
    if (threadIdx.x == 0) tail[blockIdx.x] = last;
}

}  // namespace

extern "C" void solve(const float* in, float* out, float* tail, int blocks, int tiles, int bug) {
    pipeline<<<blocks, 128>>>(in, out, tail, tiles, bug);
    cudaDeviceSynchronize();
}
