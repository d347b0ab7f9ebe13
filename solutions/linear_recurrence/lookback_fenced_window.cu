// linear_recurrence reference: single pass, decoupled look-back.
//
// A step h -> a*h + x is an affine map, and "f then g" composes to
// (f.a*g.a, g.a*f.x + g.x): associative, so time can be split into tiles.
// Each block takes one tile of TILE steps of one row (blocks in row-major tile
// order), loads it once (one float4 of a and of x per thread), composes the
// maps per thread, then across the warp (shuffles) and the block (shared
// memory). It publishes its tile's map at once, then warp 0 looks back over
// the preceding tiles of its row, 32 at a time, composing published maps
// until it meets a tile that has published its inclusive prefix (the state at
// its end). That gives the state carried into the tile; the block publishes
// its own end state and writes h. a and x are read once and h written once:
// 12 bytes per element, the floor. Blocks only wait on lower-numbered blocks,
// which the GPU dispatches first, so the waiting cannot deadlock.
//
// Tile status lives in scratch memory kept between calls. Its flags carry the
// call's epoch, so stale flags of an earlier call read as "not ready" and no
// memset is needed per call.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int THREADS = 512, WARPS = THREADS / 32, ITEMS = 4, TILE = THREADS * ITEMS;
constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned AGGREGATE = 1, INCLUSIVE = 2;  // added to the epoch's base (epoch * 4)

struct Affine {
    float a, x;  // h -> a*h + x
};

__device__ __forceinline__ Affine then(Affine f, Affine g) { return {f.a * g.a, fmaf(g.a, f.x, g.x)}; }

__device__ __forceinline__ Affine shfl_up(Affine f, int offset) {
    return {__shfl_up_sync(FULL, f.a, offset), __shfl_up_sync(FULL, f.x, offset)};
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

struct TileStatus {
    unsigned* flag;  // epoch*4 + AGGREGATE or INCLUSIVE once published
    float* agg_a;    // the tile's own map
    float* agg_x;
    float* end_h;  // the state at the tile's end (INCLUSIVE)
};

template <bool VEC4>
__global__ __launch_bounds__(THREADS) void recurrence_single_pass(const float* __restrict__ a,
                                                                   const float* __restrict__ x,
                                                                   float* __restrict__ h, int seq_len,
                                                                   int tiles_per_row, TileStatus status,
                                                                   unsigned epoch_base) {
    __shared__ Affine warp_inclusive[WARPS];
    __shared__ float carry_in;
    const int tile = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int k = tile % tiles_per_row;  // tile index within its row
    const size_t row = (size_t)(tile / tiles_per_row) * seq_len;
    const int t0 = k * TILE + threadIdx.x * ITEMS;

    float av[ITEMS], xv[ITEMS];
    if (VEC4 && t0 + ITEMS <= seq_len) {
        float4 a4 = __ldcs(reinterpret_cast<const float4*>(a + row + t0));
        float4 x4 = __ldcs(reinterpret_cast<const float4*>(x + row + t0));
        av[0] = a4.x, av[1] = a4.y, av[2] = a4.z, av[3] = a4.w;
        xv[0] = x4.x, xv[1] = x4.y, xv[2] = x4.z, xv[3] = x4.w;
    } else {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            bool in = t0 + i < seq_len;  // past the end: the identity map
            av[i] = in ? __ldcs(a + row + t0 + i) : 1.0f;
            xv[i] = in ? __ldcs(x + row + t0 + i) : 0.0f;
        }
    }

    Affine mine = {1.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) mine = then(mine, Affine{av[i], xv[i]});
    const Affine lane_inclusive = warp_scan(mine, lane);
    if (lane == 31) warp_inclusive[warp] = lane_inclusive;
    __syncthreads();
    if (warp == 0) {
        Affine w = lane < WARPS ? warp_inclusive[lane] : Affine{1.0f, 0.0f};
        w = warp_scan(w, lane);
        __syncwarp();
        if (lane < WARPS) warp_inclusive[lane] = w;
    }
    __syncthreads();
    const Affine tile_map = warp_inclusive[WARPS - 1];

    if (warp == 0) {
        volatile unsigned* flag = status.flag;
        float carry = 0.0f;
        if (k > 0) {
            if (lane == 0) {
                status.agg_a[tile] = tile_map.a;
                status.agg_x[tile] = tile_map.x;
                __threadfence();
                flag[tile] = epoch_base + AGGREGATE;
            }
            Affine later = {1.0f, 0.0f};  // tiles between the window and this one, composed
            for (int hi = k - 1;; hi -= 32) {
                const int j = hi - 31 + lane;  // this lane's tile index in the row, in order
                unsigned state;
                do {
                    state = j >= 0 ? flag[tile - k + j] : epoch_base + AGGREGATE;
                } while (__any_sync(FULL, state != epoch_base + AGGREGATE && state != epoch_base + INCLUSIVE));
                __threadfence();
                const unsigned inclusive = __ballot_sync(FULL, state == epoch_base + INCLUSIVE);
                const int last = inclusive ? 31 - __clz(inclusive) : -1;  // newest tile with its end state
                Affine g = {1.0f, 0.0f};
                if (j >= 0 && lane > last) {
                    g = {((volatile float*)status.agg_a)[tile - k + j], ((volatile float*)status.agg_x)[tile - k + j]};
                } else if (lane == last) {
                    g = {0.0f, ((volatile float*)status.end_h)[tile - k + j]};  // a constant map: h -> end_h
                }
                g = warp_scan(g, lane);
                Affine window = {__shfl_sync(FULL, g.a, 31), __shfl_sync(FULL, g.x, 31)};
                later = then(window, later);
                if (inclusive) break;  // tile 0 of a row always publishes INCLUSIVE: this ends
            }
            carry = later.x;  // `later` starts with a constant map, so it maps anything to the carried state
        }
        if (lane == 0) {
            status.end_h[tile] = fmaf(tile_map.a, carry, tile_map.x);
            __threadfence();
            flag[tile] = epoch_base + INCLUSIVE;
            carry_in = carry;
        }
    }
    __syncthreads();

    // The state before this thread's first step: the maps of earlier warps and
    // lanes of the tile applied to the carried-in state.
    Affine before = warp > 0 ? warp_inclusive[warp - 1] : Affine{1.0f, 0.0f};
    Affine lane_before = shfl_up(lane_inclusive, 1);
    if (lane > 0) before = then(before, lane_before);
    float state = fmaf(before.a, carry_in, before.x);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) av[i] = state = fmaf(av[i], state, xv[i]);
    if (VEC4 && t0 + ITEMS <= seq_len) {
        __stcs(reinterpret_cast<float4*>(h + row + t0), make_float4(av[0], av[1], av[2], av[3]));
    } else {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            if (t0 + i < seq_len) h[row + t0 + i] = av[i];
    }
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
    TileStatus status{};
    int capacity = 0;  // tiles
    unsigned epoch = 0;
};
Scratch scratch;

bool reserve(int tiles) {
    if (tiles <= scratch.capacity) return true;
    cudaFree(scratch.status.flag);
    void* block = nullptr;
    size_t bytes = (size_t)tiles * 4 * sizeof(float);
    if (cudaMalloc(&block, bytes) != cudaSuccess) return false;
    cudaMemset(block, 0, bytes);  // flag 0 is "not ready" in every epoch
    scratch.status = {static_cast<unsigned*>(block), static_cast<float*>(block) + tiles,
                      static_cast<float*>(block) + 2 * (size_t)tiles, static_cast<float*>(block) + 3 * (size_t)tiles};
    scratch.capacity = tiles;
    return true;
}

}  // namespace

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    if (seq_len < SHORT_ROW) {
        recurrence_thread_per_row<<<(batch + 127) / 128, 128>>>(a, x, h, batch, seq_len);
        return;
    }
    const int tiles_per_row = (seq_len + TILE - 1) / TILE;
    const int tiles = batch * tiles_per_row;
    if (!reserve(tiles)) return;  // out of memory: h stays unwritten and the check says so
    const unsigned epoch_base = ++scratch.epoch * 4;  // wraps after 2^30 calls
    const bool aligned = seq_len % 4 == 0 && ((uintptr_t)a | (uintptr_t)x | (uintptr_t)h) % 16 == 0;
    if (aligned)
        recurrence_single_pass<true><<<tiles, THREADS>>>(a, x, h, seq_len, tiles_per_row, scratch.status, epoch_base);
    else
        recurrence_single_pass<false><<<tiles, THREADS>>>(a, x, h, seq_len, tiles_per_row, scratch.status, epoch_base);
}
