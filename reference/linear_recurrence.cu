// linear_recurrence: one pass, decoupled look-back along time. Each row is cut
// into tiles of 4096 steps (256 threads x 16 consecutive steps); block t
// takes tile t / batch of row t % batch: the rows advance side by side and
// each row's look-back chain needs only 1/batch of the streaming rate. A tile
// waits only on tiles of lower block index: blocks are launched in increasing
// index order (CUB's single-pass scan relies on the same), so those already
// run or are done. The block copies its tile's a and x global -> shared
// memory with cp.async, composes the tile's affine map h -> a*h + x (per
// thread, across the warp, across the 8 warps) and publishes it, turns each
// step's a and x in shared memory into the map from the tile's start to that
// step, and warp 0 looks back over the row's preceding tiles, composing their
// maps until one has published its end state. The block publishes its own end
// state and writes h = a' * carry + x' (the step's map applied to the state
// carried in): one FMA per step, fused into the stores.
//
// Phase timestamps of every block on the H200 (reference/linear_recurrence_phases.cu,
// reference/linear_recurrence.md) showed the look-back as the longest phase:
// round trips of status reads queued behind the kernel's own traffic. Hence:
// - status in row order: a tile's two words (a and x of its map) side by side,
//   a row's tiles next to each other, so a look-back window of 32 tiles is 512
//   contiguous bytes (4 lines, not 64), read by one 16-byte load per lane;
// - the rerun with the carry done before the look-back (the map per step),
//   so once the carry is known only the stores remain;
// - an L2 prefetch: block t asks the copy engine for the a and x of block
//   t + PREFETCH_TILES (cp.async.bulk.prefetch.L2, one thread, nothing
//   returned to the SM), so DRAM streams that tile into L2 while this block
//   waits, and its block later copies it from L2.
// Status words: 64 bits, (tag << 32) | float bits, tag = epoch * 4 + {1 map,
// 2 end state}; the end state is the constant map (0, end h), a rewrite of the
// x word only. Each word carries its own tag, so a torn 16-byte read is
// harmless, one round trip per look-back step, and no fence.
//
// Why cp.async: the rate is bounded by the bytes of loads each SM keeps in
// flight while some of its blocks wait (for their loads and their
// look-back). Loads through registers are bounded by registers (64 bytes per
// thread: 5 blocks of 256 threads per SM, 80 KB). cp.async needs no
// destination registers: 32 KB of a and x per block, ~40 registers, 6 blocks
// per SM, 192 KB in flight per SM.
//
// Shared memory holds each array as float4s at a swizzled slot,
// q ^ ((q >> 3) & 7): the striped copies (thread t: float4 t + 256 i) and a
// thread's reads of its own 4 consecutive float4s (16 consecutive steps) both
// touch 8 distinct 16-byte slots of a 128-byte row per quarter warp, so
// neither has bank conflicts.
#include <cuda_runtime.h>
#include <stdint.h>
#include <cuda_pipeline.h>

// PHASE(k): a timestamp of phase k for reference/linear_recurrence_phases.cu, which
// defines it (reference/phase_stamps.cuh); nothing in a normal build.
#ifndef PHASE
#define PHASE(k)
#endif

namespace {

constexpr int THREADS = 256, ITEMS = 16;  // ITEMS consecutive steps per thread
constexpr int BLOCKS_PER_SM = 6;         // 6 x 32 KB of shared memory, <= 42 registers
#ifndef PREFETCH_TILES
#define PREFETCH_TILES 256  // how far ahead (in blocks) a block prefetches into L2: 8 MB
#endif
constexpr int WARPS = THREADS / 32, TILE = THREADS * ITEMS, QUADS = TILE / 4;

// The shared-memory slot of the tile's float4 q.
__device__ __forceinline__ int slot(int q) { return q ^ ((q >> 3) & 7); }
// The shared-memory index of the tile's step e.
__device__ __forceinline__ int slot_of_step(int e) { return 4 * slot(e >> 2) + (e & 3); }
constexpr unsigned FULL = 0xffffffffu, NONE = 0xffffffffu;
constexpr unsigned MAP = 1, END_STATE = 2;  // added to the epoch's base (epoch * 4)

struct Affine {
    float a, x;  // h -> a*h + x
};

__device__ __forceinline__ Affine then(Affine f, Affine g) { return {f.a * g.a, fmaf(g.a, f.x, g.x)}; }

__device__ __forceinline__ Affine shfl_up(Affine f, int offset) {
    return {__shfl_up_sync(FULL, f.a, offset), __shfl_up_sync(FULL, f.x, offset)};
}

__device__ __forceinline__ Affine shfl_down(Affine f, int offset) {
    return {__shfl_down_sync(FULL, f.a, offset), __shfl_down_sync(FULL, f.x, offset)};
}

// Inclusive scan of the lanes' maps in lane order.
__device__ __forceinline__ Affine warp_scan(Affine f, int lane) {
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        Affine g = shfl_up(f, offset);
        if (lane >= offset) f = then(g, f);
    }
    return f;
}

__device__ __forceinline__ unsigned long long word(unsigned tag, float v) {
    return ((unsigned long long)tag << 32) | __float_as_uint(v);
}
__device__ __forceinline__ unsigned tag_of(unsigned long long w) { return (unsigned)(w >> 32); }
__device__ __forceinline__ float value_of(unsigned long long w) { return __uint_as_float((unsigned)w); }

__device__ __forceinline__ void write_word(unsigned long long* p, unsigned long long v) {
    *(volatile unsigned long long*)p = v;
}

// A tile's status: its two words, (tag, a of its map) then (tag, x of its map
// or its end state), in one 16-byte access (each word carries its own tag).
__device__ __forceinline__ void read_pair(const unsigned long long* p, unsigned long long& a, unsigned long long& x) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(x) : "l"(p) : "memory");
}
__device__ __forceinline__ void write_pair(unsigned long long* p, unsigned long long a, unsigned long long x) {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(x) : "memory");
}

// What the reader may use of a published tile: 0 (not ready), MAP or END_STATE.
__device__ __forceinline__ unsigned state_of(unsigned long long aw, unsigned long long xw, unsigned base) {
    if (tag_of(xw) == base + END_STATE) return END_STATE;
    if (tag_of(xw) == base + MAP && tag_of(aw) == base + MAP) return MAP;
    return 0;
}

// The state carried into tile k of its row, whose status pair starts at
// `own` (the row's tile k - d at own - 2d). Run by one whole warp, k > 0.
__device__ __forceinline__ float look_back(const unsigned long long* status, long long own, int k, unsigned base,
                                           int lane) {
    Affine later = {1.0f, 0.0f};  // the tiles already accounted for, composed (oldest first)
    for (int end = k;; end -= 32) {  // the row's tiles [0, end) not yet accounted for
        const int j = end - 1 - lane;  // lane 0 is the nearest
        const unsigned long long* p = status + own - 2 * (long long)(k - j);
        unsigned long long aw = 0, xw = word(base + END_STATE, 0.0f);  // before the row: the state 0
        if (j >= 0) read_pair(p, aw, xw);
        unsigned first_end, first_missing, state;
        while (true) {
            state = state_of(aw, xw, base);
            first_end = __reduce_min_sync(FULL, state == END_STATE ? (unsigned)lane : NONE);
            first_missing = __reduce_min_sync(FULL, state == 0 ? (unsigned)lane : NONE);
            if (first_missing == NONE || first_missing > first_end) break;
            if (state == 0) read_pair(p, aw, xw);
        }
        // Compose lanes 0 .. first_end (newest first in lane order): lane l ends
        // up holding "tile of lane l+span-1 then ... then tile of lane l".
        Affine g = {1.0f, 0.0f};
        if ((unsigned)lane <= first_end)
            g = state == END_STATE ? Affine{0.0f, value_of(xw)} : Affine{value_of(aw), value_of(xw)};
#pragma unroll
        for (int offset = 1; offset < 32; offset *= 2) {
            Affine older = shfl_down(g, offset);
            if (lane + offset < 32) g = then(older, g);
        }
        Affine window = {__shfl_sync(FULL, g.a, 0), __shfl_sync(FULL, g.x, 0)};
        later = then(window, later);
        if (first_end != NONE) return later.x;  // a constant map: it sends anything to the carried state
    }
}

// The first status word of tile k of the row of block `order`: rows one after
// another, a row's tiles in order, two words each.
__device__ __forceinline__ long long status_pair(long long order, int k, int batch, int seq_len) {
    return 2 * ((order % batch) * ((seq_len + TILE - 1) / TILE) + k);
}

// The tile of block `order`: tile order / batch of row order % batch.
struct TileSpan {
    int k;         // tile index within its row
    size_t first;  // the tile's first step
    int steps;     // TILE, or fewer at the end of a row
};

__device__ __forceinline__ TileSpan tile_span(long long order, int batch, int seq_len) {
    const int k = (int)(order / batch);
    const int rest = seq_len - k * TILE;
    return {k, (size_t)(order % batch) * seq_len + (size_t)k * TILE, rest < TILE ? rest : TILE};
}

// Brings the a and x of the tile with block index `order` into L2, one bulk
// prefetch per array (whole 16-byte units; the launch is aligned).
__device__ __forceinline__ void prefetch_tile(const float* a, const float* x, long long order, int batch, int seq_len) {
    const TileSpan span = tile_span(order, batch, seq_len);
    const size_t first = span.first;
    const unsigned bytes = (unsigned)(span.steps * 4) & ~15u;
    if (bytes) {
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a + first), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(x + first), "r"(bytes) : "memory");
    }
}

template <bool VEC4>
__global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void recurrence_single_pass(
    const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ h, int batch, int seq_len,
    unsigned long long* status, unsigned base) {
    __shared__ __align__(16) float sa[TILE];
    __shared__ __align__(16) float sx[TILE];
    __shared__ Affine warp_total[WARPS];
    __shared__ float carry_in;
    float4* sa4 = reinterpret_cast<float4*>(sa);
    float4* sx4 = reinterpret_cast<float4*>(sx);
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    PHASE(0);
    const long long order = (long long)blockIdx.x;
    const TileSpan span = tile_span(order, batch, seq_len);
    const int k = span.k, steps = span.steps;
    const size_t first = span.first;
    const bool whole = VEC4 && steps == TILE;

    if (whole) {
        const float4* ga = reinterpret_cast<const float4*>(a + first);
        const float4* gx = reinterpret_cast<const float4*>(x + first);
#pragma unroll
        for (int i = 0; i < QUADS / THREADS; ++i) {
            const int q = t + i * THREADS;
            __pipeline_memcpy_async(sa + 4 * slot(q), ga + q, 16);
            __pipeline_memcpy_async(sx + 4 * slot(q), gx + q, 16);
        }
        __pipeline_commit();
        if (t == 0 && order + PREFETCH_TILES < (long long)gridDim.x)
            prefetch_tile(a, x, order + PREFETCH_TILES, batch, seq_len);
        __pipeline_wait_prior(0);
    } else {
        for (int e = t; e < TILE; e += THREADS) {  // past the end: the identity map
            sa[slot_of_step(e)] = e < steps ? a[first + e] : 1.0f;
            sx[slot_of_step(e)] = e < steps ? x[first + e] : 0.0f;
        }
    }
    __syncthreads();
    PHASE(1);

    Affine mine = {1.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < ITEMS / 4; ++i) {
        const int s = slot(t * (ITEMS / 4) + i);
        const float4 A = sa4[s], X = sx4[s];
        mine = then(mine, Affine{A.x, X.x});
        mine = then(mine, Affine{A.y, X.y});
        mine = then(mine, Affine{A.z, X.z});
        mine = then(mine, Affine{A.w, X.w});
    }
    const Affine lane_inclusive = warp_scan(mine, lane);
    if (lane == 31) warp_total[warp] = lane_inclusive;
    __syncthreads();
    Affine before = {1.0f, 0.0f}, tile_map = {1.0f, 0.0f};  // earlier warps' maps; all warps' maps
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) before = tile_map;
        tile_map = then(tile_map, warp_total[w]);
    }
    if (t == 0) {
        const long long own_status = status_pair(order, k, batch, seq_len);
        if (k == 0) {
            write_word(status + own_status + 1, word(base + END_STATE, tile_map.x));  // carried in: 0
        } else {
            write_pair(status + own_status, word(base + MAP, tile_map.a), word(base + MAP, tile_map.x));
        }
    }
    // The map from the tile's start to this thread's first step.
    Affine lane_before = shfl_up(lane_inclusive, 1);
    if (lane > 0) before = then(before, lane_before);
    // Each step's map from the tile's start, into its own slots (a -> sa, x -> sx),
    // before the look-back: once the carry is known, h = a * carry + x is one
    // FMA per step at the store.
    Affine step = before;
#pragma unroll
    for (int i = 0; i < ITEMS / 4; ++i) {
        const int s = slot(t * (ITEMS / 4) + i);
        float4 A = sa4[s], X = sx4[s];
        step = then(step, Affine{A.x, X.x}), A.x = step.a, X.x = step.x;
        step = then(step, Affine{A.y, X.y}), A.y = step.a, X.y = step.x;
        step = then(step, Affine{A.z, X.z}), A.z = step.a, X.z = step.x;
        step = then(step, Affine{A.w, X.w}), A.w = step.a, X.w = step.x;
        sa4[s] = A;
        sx4[s] = X;
    }

    PHASE(2);
    if (warp == 0) {
        float carry = 0.0f;
        if (k > 0) {
            const long long own_status = status_pair(order, k, batch, seq_len);
            carry = look_back(status, own_status, k, base, lane);
            if (lane == 0)
                write_word(status + own_status + 1, word(base + END_STATE, fmaf(tile_map.a, carry, tile_map.x)));
        }
        if (lane == 0) carry_in = carry;
    }
    PHASE(3);
    __syncthreads();
    const float carry = carry_in;
    if (whole) {
        float4* gh = reinterpret_cast<float4*>(h + first);
#pragma unroll
        for (int i = 0; i < QUADS / THREADS; ++i) {
            const int q = t + i * THREADS;
            const float4 A = sa4[slot(q)], X = sx4[slot(q)];
            __stcs(gh + q, make_float4(fmaf(A.x, carry, X.x), fmaf(A.y, carry, X.y), fmaf(A.z, carry, X.z),
                                       fmaf(A.w, carry, X.w)));
        }
    } else {
        for (int e = t; e < steps; e += THREADS) h[first + e] = fmaf(sa[slot_of_step(e)], carry, sx[slot_of_step(e)]);
    }
    PHASE(4);
}

// Rows shorter than this run one thread per row: a tile per row would leave
// most of each block idle.
constexpr int SHORT_ROW = 64;

__global__ void recurrence_thread_per_row(const float* a, const float* x, float* h, int batch, int seq_len) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    size_t row = (size_t)b * seq_len;
    float state = 0.0f;
    for (int t = 0; t < seq_len; ++t) h[row + t] = state = fmaf(a[row + t], state, x[row + t]);
}

struct Scratch {
    unsigned long long* status = nullptr;  // two words per tile
    long long capacity = 0;  // tiles
    unsigned epoch = 0;
};
Scratch scratch;

bool reserve(long long tiles) {
    if (tiles <= scratch.capacity) return true;
    cudaFree(scratch.status);
    scratch = Scratch{nullptr, 0, scratch.epoch};
    unsigned long long* block = nullptr;
    size_t bytes = (size_t)(2 * tiles) * sizeof(unsigned long long);
    if (cudaMalloc(&block, bytes) != cudaSuccess) return false;
    cudaMemset(block, 0, bytes);  // tag 0 is "not ready" in every epoch
    scratch.status = block;
    scratch.capacity = tiles;
    return true;
}

}  // namespace

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    if (seq_len < SHORT_ROW) {
        recurrence_thread_per_row<<<(batch + 127) / 128, 128>>>(a, x, h, batch, seq_len);
        return;
    }
    const long long tiles = (long long)batch * ((seq_len + TILE - 1) / TILE);
    if (!reserve(tiles)) return;  // out of memory: h stays unwritten and the check says so
    scratch.epoch = scratch.epoch % ((1u << 30) - 1) + 1;  // 1 .. 2^30 - 1: tags never wrap into another epoch's
    const unsigned base = scratch.epoch * 4;
    const bool aligned = seq_len % 4 == 0 && ((uintptr_t)a | (uintptr_t)x | (uintptr_t)h) % 16 == 0;
    if (aligned)
        recurrence_single_pass<true><<<(unsigned)tiles, THREADS>>>(a, x, h, batch, seq_len, scratch.status, base);
    else
        recurrence_single_pass<false><<<(unsigned)tiles, THREADS>>>(a, x, h, batch, seq_len, scratch.status, base);
}
