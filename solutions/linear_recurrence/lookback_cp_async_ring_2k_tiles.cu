#include <cuda_runtime.h>
#include <stdint.h>

// linear_recurrence: lookback_cp_async_ring.cu with tiles half as large
// (2048 steps, 8 per thread) and a ring of 4 (64 KB per block, 3 blocks per
// SM, 144 KB in flight per SM): more blocks per SM to overlap each one's
// look-back, at twice the look-back links. The text below is that file's,
// numbers for its 4096-step tiles.
//
// linear_recurrence: single-pass decoupled look-back on a persistent grid
// whose loads never stop while a block waits for its predecessors.
//
// A step h -> a*h + x is an affine map; "f then g" = (f.a*g.a, g.a*f.x + g.x)
// is associative, so a row is cut into tiles of TILE steps that are composed
// on their own and chained through published maps (the reference's idea).
// What changes is how memory is kept busy: the reference loads 32 bytes per
// thread once per block and then waits in its look-back with nothing in
// flight. Here each resident block keeps a ring of STAGES tiles (a and x) in
// shared memory filled by cp.async: while it composes, looks back and
// writes tile i, tiles i+1 .. i+STAGES-1 are on their way (2 blocks per SM x
// 2 tiles x 32 KB = 128 KB in flight per SM).
//
// Per tile of 4096 steps of one row (256 threads x 16 consecutive steps):
// each thread composes its 16 maps, the warp scans the lane maps with
// shuffles, every thread composes the maps of the warps before it from
// shared memory; warp 0 publishes the tile's map and looks back; each thread
// reruns its 16 steps from its carried-in state and the states leave through
// shared memory as coalesced float4 stores. a and x are read once and h
// written once: 12 bytes per step.
//
// Status: two 64-bit words per tile, each (tag << 32) | float bits with tag =
// epoch*4 + flag, written and read whole, so no word's value can be seen
// without its own flag and no fence is needed; a reader takes the pair only
// when both tags agree. AGGREGATE holds the tile's map (A, X); INCLUSIVE
// holds the constant map (0, h at the tile's end). The epoch is solve()'s
// call count: words of earlier calls read as "not ready".
//
// Tiles (row-major: row, then tile within the row) come from an atomic
// counter in the order blocks claim them, never from blockIdx, and each
// block works through its claims in increasing order; the lowest unfinished
// tile therefore belongs to a running block whose predecessors are all done,
// so the look-back cannot deadlock. The counter of call e is counters[e & 1];
// call e zeroes counters[(e + 1) & 1] for the next call.

namespace {

constexpr int THREADS = 256, WARPS = THREADS / 32;
constexpr int ITEMS = 8;               // consecutive steps per thread
constexpr int TILE = THREADS * ITEMS;  // 2048
constexpr int SLOTS = TILE / 4;        // 16-byte slots per array per tile
constexpr int STAGES = 4;
constexpr int MAX_TILES = (1 << 26) / TILE + 4096;  // batch*seq_len <= 2^26, plus one partial tile per row
constexpr int SHORT_ROW = 64;  // shorter rows: one thread per row
constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned AGGREGATE = 1, INCLUSIVE = 2;

__device__ unsigned long long tile_status[MAX_TILES][2];
__device__ unsigned tile_counters[2];

struct Affine {
    float a, x;  // h -> a*h + x
};
__device__ __forceinline__ Affine then(Affine f, Affine g) { return {f.a * g.a, fmaf(g.a, f.x, g.x)}; }

struct Shared {
    float4 a[STAGES][SLOTS];
    float4 x[STAGES][SLOTS];
    int tile_of[STAGES];
    Affine warp_maps[WARPS];
    float carry_in;
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

// Starts the copies of one tile's a and x (steps past the row: zeros, which
// only affect the tile's own map after the row's last step: never used).
template <bool VEC>
__device__ __forceinline__ void load_tile(float4* a_slot, float4* x_slot, const float* a, const float* x,
                                          long long row_start, int t0, int seq_len) {
#pragma unroll
    for (int k = 0; k < SLOTS / THREADS; ++k) {
        const int f = threadIdx.x + k * THREADS;
        const int t = t0 + 4 * f;
        const int left = seq_len - t;
        const long long e = row_start + t;
        if (VEC) {
            const int bytes = left >= 4 ? 16 : left > 0 ? 4 * left : 0;
            cp_async_16(a_slot + swizzle(f), bytes ? a + e : a, bytes);
            cp_async_16(x_slot + swizzle(f), bytes ? x + e : x, bytes);
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const bool in = c < left;
                cp_async_4((float*)(a_slot + swizzle(f)) + c, in ? a + e + c : a, in ? 4 : 0);
                cp_async_4((float*)(x_slot + swizzle(f)) + c, in ? x + e + c : x, in ? 4 : 0);
            }
        }
    }
}

__device__ __forceinline__ void publish(int tile, unsigned tag, float v0, float v1) {
    volatile unsigned long long* w = tile_status[tile];
    w[0] = ((unsigned long long)tag << 32) | __float_as_uint(v0);
    w[1] = ((unsigned long long)tag << 32) | __float_as_uint(v1);
}

__device__ __forceinline__ Affine shfl_up(Affine f, int d) {
    return {__shfl_up_sync(FULL, f.a, d), __shfl_up_sync(FULL, f.x, d)};
}
__device__ __forceinline__ Affine shfl_down(Affine f, int d) {
    return {__shfl_down_sync(FULL, f.a, d), __shfl_down_sync(FULL, f.x, d)};
}

// The state carried into tile `tile` (index k within its row); publishes the
// state at the tile's end. Warp 0 only.
__device__ float look_back(int tile, int k, Affine tile_map, unsigned epoch_base, int lane) {
    float carry = 0.0f;
    if (k > 0) {
        if (lane == 0) publish(tile, epoch_base + AGGREGATE, tile_map.a, tile_map.x);
        Affine later = {1.0f, 0.0f};  // the maps of the windows already read, composed
        for (int end = k;; end -= 32) {  // tiles [0, end) of the row not yet read
            const int pred = end - 1 - lane;  // lane 0 is the nearest
            Affine g = {1.0f, 0.0f};
            unsigned flag = 0, inclusive_lanes;
            for (int backoff = 0;; backoff = backoff < 256 ? backoff + 32 : 256) {
                if (pred >= 0) {
                    const volatile unsigned long long* w = tile_status[tile - k + pred];
                    const unsigned long long w0 = w[0], w1 = w[1];
                    const unsigned tag = (unsigned)(w0 >> 32);
                    flag = tag == (unsigned)(w1 >> 32) && (tag & ~3u) == epoch_base ? tag & 3u : 0u;
                    g = {__uint_as_float((unsigned)w0), __uint_as_float((unsigned)w1)};
                } else {
                    flag = INCLUSIVE, g = {0.0f, 0.0f};  // before the row: the state 0
                }
                const unsigned ready = __ballot_sync(FULL, flag != 0);
                inclusive_lanes = __ballot_sync(FULL, flag == INCLUSIVE);
                const unsigned needed = inclusive_lanes ? (inclusive_lanes ^ (inclusive_lanes - 1)) : FULL;
                if ((ready & needed) == needed) break;
                __nanosleep(backoff);
            }
            const int stop = inclusive_lanes ? __ffs(inclusive_lanes) - 1 : 31;
            if (lane > stop) g = {1.0f, 0.0f};
            // ordered reduction: lane 0 ends with lanes 31..0 composed, the oldest (highest lane) first
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const Affine older = shfl_down(g, d);
                if ((lane & (2 * d - 1)) == 0) g = then(older, g);
            }
            const Affine window = {__shfl_sync(FULL, g.a, 0), __shfl_sync(FULL, g.x, 0)};
            later = then(window, later);
            if (inclusive_lanes) break;
        }
        carry = later.x;  // the oldest map read is constant (INCLUSIVE or the row start)
    }
    if (lane == 0) publish(tile, epoch_base + INCLUSIVE, 0.0f, fmaf(tile_map.a, carry, tile_map.x));
    return carry;
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS) recurrence_ring(const float* __restrict__ a, const float* __restrict__ x,
                                                           float* __restrict__ h, int seq_len, int tiles_per_row,
                                                           int tiles, unsigned epoch) {
    extern __shared__ float4 dynamic_smem[];
    Shared& sh = *reinterpret_cast<Shared*>(dynamic_smem);
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const unsigned epoch_base = epoch * 4;
    unsigned* counter = tile_counters + (epoch & 1);
    if (blockIdx.x == 0 && t == 0) tile_counters[(epoch + 1) & 1] = 0;

    if (t == 0) {  // one claim of STAGES-1 consecutive tiles: the slots' tiles increase
        const int first = (int)atomicAdd(counter, (unsigned)(STAGES - 1));
        for (int s = 0; s < STAGES - 1; ++s) sh.tile_of[s] = first + s;
    }
    __syncthreads();
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        const int tile = sh.tile_of[s];
        if (tile < tiles)
            load_tile<VEC>(sh.a[s], sh.x[s], a, x, (long long)(tile / tiles_per_row) * seq_len,
                           (tile % tiles_per_row) * TILE, seq_len);
        cp_async_commit();
    }
    if (t == THREADS - 1) sh.tile_of[STAGES - 1] = (int)atomicAdd(counter, 1u);
    __syncthreads();

    for (int it = 0;; ++it) {
        const int stage = it % STAGES;
        const int tile = sh.tile_of[stage];
        if (tile >= tiles) break;  // claims only grow: nothing left for this block
        const int refill = (it + STAGES - 1) % STAGES, refill_tile = sh.tile_of[refill];
        if (refill_tile < tiles)
            load_tile<VEC>(sh.a[refill], sh.x[refill], a, x, (long long)(refill_tile / tiles_per_row) * seq_len,
                           (refill_tile % tiles_per_row) * TILE, seq_len);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        unsigned next_claim = 0;
        if (t == THREADS - 1) next_claim = atomicAdd(counter, 1u);

        const int k = tile % tiles_per_row;
        const long long row_start = (long long)(tile / tiles_per_row) * seq_len;
        const int t0 = k * TILE;
        float av[ITEMS], xv[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const int f = swizzle(t * (ITEMS / 4) + j);
            const float4 va = sh.a[stage][f], vx = sh.x[stage][f];
            av[4 * j] = va.x, av[4 * j + 1] = va.y, av[4 * j + 2] = va.z, av[4 * j + 3] = va.w;
            xv[4 * j] = vx.x, xv[4 * j + 1] = vx.y, xv[4 * j + 2] = vx.z, xv[4 * j + 3] = vx.w;
        }
        Affine mine = {av[0], xv[0]};
#pragma unroll
        for (int j = 1; j < ITEMS; ++j) mine = then(mine, Affine{av[j], xv[j]});
        Affine lane_inclusive = mine;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const Affine g = shfl_up(lane_inclusive, d);
            if (lane >= d) lane_inclusive = then(g, lane_inclusive);
        }
        if (lane == 31) sh.warp_maps[warp] = lane_inclusive;
        __syncthreads();
        Affine before = {1.0f, 0.0f};  // the maps of the earlier warps, composed
#pragma unroll
        for (int w = 0; w < WARPS - 1; ++w)
            if (w < warp) before = then(before, sh.warp_maps[w]);
        Affine tile_map = sh.warp_maps[0];
#pragma unroll
        for (int w = 1; w < WARPS; ++w) tile_map = then(tile_map, sh.warp_maps[w]);
        if (warp == 0) {
            const float carry = look_back(tile, k, tile_map, epoch_base, lane);
            if (lane == 0) sh.carry_in = carry;
        }
        __syncthreads();
        const Affine lane_before = shfl_up(lane_inclusive, 1);
        if (lane > 0) before = then(before, lane_before);
        float state = fmaf(before.a, sh.carry_in, before.x);
        float4* h_slot = sh.a[stage];  // the states go out through a's slots
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            float4 v;
            v.x = state = fmaf(av[4 * j], state, xv[4 * j]);
            v.y = state = fmaf(av[4 * j + 1], state, xv[4 * j + 1]);
            v.z = state = fmaf(av[4 * j + 2], state, xv[4 * j + 2]);
            v.w = state = fmaf(av[4 * j + 3], state, xv[4 * j + 3]);
            h_slot[swizzle(t * (ITEMS / 4) + j)] = v;
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < SLOTS / THREADS; ++s) {
            const int f = t + s * THREADS;
            const int step = t0 + 4 * f;
            const long long e = row_start + step;
            const float4 v = h_slot[swizzle(f)];
            if (VEC && step + 4 <= seq_len) {
                __stcs(reinterpret_cast<float4*>(h + e), v);
            } else {
                if (step < seq_len) h[e] = v.x;
                if (step + 1 < seq_len) h[e + 1] = v.y;
                if (step + 2 < seq_len) h[e + 2] = v.z;
                if (step + 3 < seq_len) h[e + 3] = v.w;
            }
        }
        if (t == THREADS - 1) sh.tile_of[stage] = (int)next_claim;
        __syncthreads();  // the slot is free and its next tile known before the refill
    }
    cp_async_wait<0>();
}

__global__ void recurrence_thread_per_row(const float* a, const float* x, float* h, int batch, int seq_len) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const size_t row = (size_t)b * seq_len;
    float state = 0.0f;
    for (int t = 0; t < seq_len; ++t) h[row + t] = state = fmaf(a[row + t], state, x[row + t]);
}

template <bool VEC>
void launch(const float* a, const float* x, float* h, int seq_len, int tiles_per_row, int tiles, unsigned epoch) {
    static int grid = 0;
    if (!grid) {
        cudaFuncSetAttribute(recurrence_ring<VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sizeof(Shared));
        int device = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, recurrence_ring<VEC>, THREADS, sizeof(Shared));
        grid = sms * (per_sm > 0 ? per_sm : 1);
    }
    recurrence_ring<VEC><<<tiles < grid ? tiles : grid, THREADS, sizeof(Shared)>>>(a, x, h, seq_len, tiles_per_row,
                                                                                   tiles, epoch);
}

}  // namespace

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    static unsigned epoch = 0;
    if (batch <= 0 || seq_len <= 0) return;
    if (seq_len < SHORT_ROW) {
        recurrence_thread_per_row<<<(batch + 127) / 128, 128>>>(a, x, h, batch, seq_len);
        return;
    }
    // 1 .. 2^30 - 2: an even count, so the parity (which counter) alternates
    // across the wrap too; status words start at 0, never a live epoch
    epoch = epoch % ((1u << 30) - 2) + 1;
    const int tiles_per_row = (seq_len + TILE - 1) / TILE;
    const int tiles = batch * tiles_per_row;
    if (seq_len % 4 == 0 && (((uintptr_t)a | (uintptr_t)x | (uintptr_t)h) & 15) == 0)
        launch<true>(a, x, h, seq_len, tiles_per_row, tiles, epoch);
    else
        launch<false>(a, x, h, seq_len, tiles_per_row, tiles, epoch);
}
