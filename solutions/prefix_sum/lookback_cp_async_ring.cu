#include <cuda_runtime.h>
#include <stdint.h>

// prefix_sum: single-pass decoupled look-back on a persistent grid whose
// loads never stop while a block waits for its predecessors.
//
// Why not one tile per block: a block that loads, scans, looks back and
// stores in turn has loads in flight only during its first phase; while
// it waits in the look-back nothing of it streams. Here each resident block
// keeps a ring of STAGES tiles in shared memory filled by cp.async: while it
// scans and looks back for tile i, tiles i+1 .. i+STAGES-1 are already on
// their way (3 blocks per SM x 3 tiles x 16 KB = 144 KB in flight per SM,
// about three times what the 4.2 TB/s copy rate needs at ~1.5 us latency).
//
// Per tile of 4096 floats (256 threads x 16 consecutive elements):
//  1. the tile arrives in shared memory, 16-byte slots XOR-swizzled so that
//     both the striped cp.async writes and each thread's 4 blocked float4
//     reads are free of bank conflicts;
//  2. per-thread sequential sums, a shuffle scan across the warp, the 8 warp
//     totals through shared memory;
//  3. warp 0 publishes the tile aggregate and looks back (below);
//  4. results go back into the same slots and out as coalesced float4 stores.
//
// Look-back: a status word per tile, 64 bits written and read whole:
// (epoch << 34) | (flag << 32) | float bits, so value and flag can never be
// seen apart and no fence is needed. The epoch is solve()'s call count:
// words of earlier calls read as "not ready", so nothing is cleared per call.
// The warp reads 32 predecessors at a time and stops at the nearest one that
// holds an inclusive prefix as soon as every tile between is ready.
//
// Tiles come from an atomic counter in the order blocks claim them, never
// from blockIdx, and each block works through its claims in increasing
// order; so the lowest unfinished tile always belongs to a running block
// whose predecessors are all done: the look-back cannot deadlock whatever
// the residency. The counter of call e is counters[e & 1]; call e zeroes
// counters[(e + 1) & 1] for the next call (the call before it, which used
// that counter, has finished: launches on a stream run in order).

namespace {

constexpr int THREADS = 256, WARPS = THREADS / 32;
constexpr int ITEMS = 16;              // consecutive floats per thread
constexpr int TILE = THREADS * ITEMS;  // 4096
constexpr int SLOTS = TILE / 4;        // 16-byte slots per tile
constexpr int STAGES = 4;              // tiles in the ring: STAGES-1 in flight while one is scanned
constexpr int MAX_N = 1 << 25;         // challenge.toml's largest N
constexpr int MAX_TILES = (MAX_N + TILE - 1) / TILE;
constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned long long AGGREGATE = 1, INCLUSIVE = 2;

__device__ unsigned long long tile_status[MAX_TILES];
__device__ unsigned tile_counters[2];

struct Shared {
    float4 ring[STAGES][SLOTS];
    int tile_of[STAGES];  // claimed tile of each ring slot
    float warp_totals[WARPS];
    float tile_prefix;
};

__device__ __forceinline__ int swizzle(int slot) { return slot ^ ((slot >> 3) & 7); }

__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }

__device__ __forceinline__ unsigned long long pack(unsigned epoch, unsigned long long flag, float v) {
    return ((unsigned long long)epoch << 34) | (flag << 32) | (unsigned long long)__float_as_uint(v);
}
__device__ __forceinline__ unsigned long long read_status(int tile) {
    return *(const volatile unsigned long long*)(tile_status + tile);
}
__device__ __forceinline__ void write_status(int tile, unsigned long long v) {
    *(volatile unsigned long long*)(tile_status + tile) = v;
}

// Starts the copies of one tile into a ring slot (past N: zeros).
template <bool VEC>
__device__ __forceinline__ void load_tile(float4* slot, const float* in, int tile, int N) {
    const long long base = (long long)tile * TILE;
#pragma unroll
    for (int k = 0; k < SLOTS / THREADS; ++k) {
        const int f = threadIdx.x + k * THREADS;
        const long long e = base + 4 * f;
        float4* dst = slot + swizzle(f);
        if (VEC) {
            const long long left = N - e;
            const int bytes = left >= 4 ? 16 : left > 0 ? 4 * (int)left : 0;
            cp_async_16(dst, bytes ? in + e : in, bytes);
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) cp_async_4((float*)dst + c, e + c < N ? in + e + c : in, e + c < N ? 4 : 0);
        }
    }
}

// The tile's exclusive prefix; publishes its inclusive prefix. Warp 0 only.
__device__ float look_back(int tile, float aggregate, unsigned epoch, int lane) {
    if (tile == 0) {
        if (lane == 0) write_status(0, pack(epoch, INCLUSIVE, aggregate));
        return 0.0f;
    }
    if (lane == 0) write_status(tile, pack(epoch, AGGREGATE, aggregate));
    float prefix = 0.0f;
    for (int end = tile;; end -= 32) {  // predecessors [0, end) not yet added
        const int pred = end - 1 - lane;  // lane 0 is the nearest
        unsigned long long s;
        unsigned inclusive_lanes;
        for (int backoff = 0;; backoff = backoff < 256 ? backoff + 32 : 256) {
            s = pred >= 0 ? read_status(pred) : pack(epoch, INCLUSIVE, 0.0f);
            const unsigned flag = (s >> 34) == epoch ? (unsigned)(s >> 32) & 3u : 0u;
            const unsigned ready = __ballot_sync(FULL, flag != 0);
            inclusive_lanes = __ballot_sync(FULL, flag == INCLUSIVE);
            // done once every lane up to the nearest inclusive one (or all 32) is ready
            const unsigned needed = inclusive_lanes ? (inclusive_lanes ^ (inclusive_lanes - 1)) : FULL;
            if ((ready & needed) == needed) break;
            __nanosleep(backoff);
        }
        const int stop = inclusive_lanes ? __ffs(inclusive_lanes) - 1 : 31;
        float v = lane <= stop ? __uint_as_float((unsigned)s) : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
        prefix += v;
        if (inclusive_lanes) break;
    }
    if (lane == 0) write_status(tile, pack(epoch, INCLUSIVE, prefix + aggregate));
    return prefix;
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS) scan_ring(const float* __restrict__ in, float* __restrict__ out, int N,
                                                     int tiles, unsigned epoch) {
    extern __shared__ float4 dynamic_smem[];
    Shared& sh = *reinterpret_cast<Shared*>(dynamic_smem);
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    unsigned* counter = tile_counters + (epoch & 1);
    if (blockIdx.x == 0 && t == 0) tile_counters[(epoch + 1) & 1] = 0;

    if (t == 0) {  // one claim of STAGES-1 consecutive tiles: the slots' tiles increase
        const int first = (int)atomicAdd(counter, (unsigned)(STAGES - 1));
        for (int s = 0; s < STAGES - 1; ++s) sh.tile_of[s] = first + s;
    }
    __syncthreads();
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (sh.tile_of[s] < tiles) load_tile<VEC>(sh.ring[s], in, sh.tile_of[s], N);
        cp_async_commit();
    }
    // The last warp claims the tile each freed slot is refilled with, one
    // iteration ahead; it uses the answer only at the end of the iteration.
    if (t == THREADS - 1) sh.tile_of[STAGES - 1] = (int)atomicAdd(counter, 1u);
    __syncthreads();

    for (int it = 0;; ++it) {
        const int stage = it % STAGES;
        const int tile = sh.tile_of[stage];
        if (tile >= tiles) break;  // claims only grow: nothing left for this block
        const int refill = (it + STAGES - 1) % STAGES;
        if (sh.tile_of[refill] < tiles) load_tile<VEC>(sh.ring[refill], in, sh.tile_of[refill], N);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();  // this tile's group is complete for this thread
        __syncthreads();               // ... and for every thread
        unsigned next_claim = 0;
        if (t == THREADS - 1) next_claim = atomicAdd(counter, 1u);

        float4* slot = sh.ring[stage];
        float x[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const float4 v = slot[swizzle(t * (ITEMS / 4) + j)];
            x[4 * j] = v.x, x[4 * j + 1] = v.y, x[4 * j + 2] = v.z, x[4 * j + 3] = v.w;
        }
#pragma unroll
        for (int j = 1; j < ITEMS; ++j) x[j] += x[j - 1];
        float inclusive = x[ITEMS - 1];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float y = __shfl_up_sync(FULL, inclusive, d);
            if (lane >= d) inclusive += y;
        }
        if (lane == 31) sh.warp_totals[warp] = inclusive;
        __syncthreads();
        float warp_exclusive = 0.0f, aggregate = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float total = sh.warp_totals[w];
            if (w < warp) warp_exclusive += total;
            aggregate += total;
        }
        if (warp == 0) {
            const float prefix = look_back(tile, aggregate, epoch, lane);
            if (lane == 0) sh.tile_prefix = prefix;
        }
        __syncthreads();
        const float offset = sh.tile_prefix + warp_exclusive + (inclusive - x[ITEMS - 1]);
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j)
            slot[swizzle(t * (ITEMS / 4) + j)] =
                make_float4(offset + x[4 * j], offset + x[4 * j + 1], offset + x[4 * j + 2], offset + x[4 * j + 3]);
        __syncthreads();
        const long long base = (long long)tile * TILE;
#pragma unroll
        for (int k = 0; k < SLOTS / THREADS; ++k) {
            const int f = t + k * THREADS;
            const long long e = base + 4 * f;
            const float4 v = slot[swizzle(f)];
            if (VEC && e + 4 <= N) {
                __stcs(reinterpret_cast<float4*>(out + e), v);
            } else {
                if (e < N) out[e] = v.x;
                if (e + 1 < N) out[e + 1] = v.y;
                if (e + 2 < N) out[e + 2] = v.z;
                if (e + 3 < N) out[e + 3] = v.w;
            }
        }
        if (t == THREADS - 1) sh.tile_of[stage] = (int)next_claim;
        __syncthreads();  // the slot is free and its next tile known before the refill
    }
    cp_async_wait<0>();  // no copy outlives the block (those left are of tiles past the end: none)
}

template <bool VEC>
void launch(const float* input, float* output, int N, int tiles, unsigned epoch) {
    static int grid = 0;
    if (!grid) {
        cudaFuncSetAttribute(scan_ring<VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sizeof(Shared));
        int device = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scan_ring<VEC>, THREADS, sizeof(Shared));
        grid = sms * (per_sm > 0 ? per_sm : 1);
    }
    scan_ring<VEC><<<tiles < grid ? tiles : grid, THREADS, sizeof(Shared)>>>(input, output, N, tiles, epoch);
}

}  // namespace

extern "C" void solve(const float* input, float* output, int N) {
    static unsigned epoch = 0;
    if (N <= 0) return;
    // 1 .. 2^30 - 2, an even count so the parity (which counter) alternates
    // across the wrap too; status words start at 0, never a live epoch
    epoch = epoch % ((1u << 30) - 2) + 1;
    const int tiles = (N + TILE - 1) / TILE;
    if ((((uintptr_t)input | (uintptr_t)output) & 15) == 0)
        launch<true>(input, output, N, tiles, epoch);
    else
        launch<false>(input, output, N, tiles, epoch);
}
