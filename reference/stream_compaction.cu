#include <cuda_runtime.h>
#include <stdint.h>

// PHASE(k): a timestamp of phase k for reference/stream_compaction_phases.cu, which
// defines it (reference/phase_stamps.cuh); nothing in a normal build.
#ifndef PHASE
#define PHASE(k)
#endif

// stream_compaction reference: solutions/stream_compaction/partition_lookback.cu with
// tiles in launch order instead of tickets, plus an L2 prefetch by the copy
// engine: block t issues one cp.async.bulk.prefetch.L2 for tile
// t + PREFETCH_TILES, so DRAM streams that tile into L2 while this block waits
// for its own loads and look-back, and block t + PREFETCH_TILES later loads it
// from L2. The kernel's DRAM reads were issued only by
// resident blocks (4 per SM, registers), and a block spends most of its
// lifetime not loading (DRAM near 52 % busy under ncu).
// One volatile load per 32-byte sector instead lost 4 % on the H200; the bulk
// form costs one instruction (reference/stream_compaction.md).
//
// The reference's design: one kernel, one pass (decoupled look-back), and the
// zeros written by the same tiles as a partition's rejected side.
//
// Every output slot is written once, and by the tile that knows what goes
// there: a kept element with kept-rank r goes to slot r; a dropped element
// with dropped-rank r (the number of dropped elements before it) "goes" to
// slot N-1-r as a zero. The dropped ranks 0 .. N-count-1 fill exactly the slots
// count .. N-1, the ones the spec sets to 0.0, and a tile's dropped elements
// have consecutive dropped ranks, so each tile writes one run of values at
// [P, P + kept) and one run of zeros ending at N - D, where P is the kept
// count before the tile and D = (tile start) - P the dropped count. No second
// launch for the zeros (a separate zero-fill kernel cost 17 us of 103 under
// ncu in solutions/stream_compaction/lookback_then_zero_tail.cu), no tile
// waits for the total.
//
// Per tile (256 threads x LOADS float4, striped: float4 q of the tile is
// thread q % 256's load q / 256, 512 contiguous bytes per warp load):
//  1. the tile is blockIdx.x: blocks are launched in increasing index order
//     (CUB's single-pass scan relies on the same), so a tile waits only on
//     tiles whose blocks already run or are done; a ticket drawn from an
//     atomic counter instead cost each block one round trip (reference/stream_compaction.md);
//  2. keep flags x > 0, a thread's count per float4 packed 8 bits each into
//     ints and scanned across the warp with shuffles; the (load, warp) totals
//     give each thread its tile-local ranks and thread 0 the tile's count,
//     published at once;
//  3. kept elements staged at their rank in shared memory before the look-back;
//  4. warp 0 looks back, 32 predecessors per round (`LANE_WORDS` status
//     words a lane: 1), waiting only for those nearer than the nearest
//     inclusive prefix. Each round is a dependent read of ~1.6 us under the
//     kernel's own traffic (prefix_sum's phase timestamps); a window of 32
//     took 81.5 us against 83.3 for 64 and 86.8 for 128 on the H200
//     (reference/stream_compaction.md). Status words are read by atomics
//     that change nothing (read_status);
//  5. the kept run and the zero run go out as aligned float4 stores with
//     scalar heads and tails.
// Status words: 64 bits, (epoch << 34) | (flag << 32) | count, written and
// read whole; the count travels with its flag, so no fence is needed. The epoch makes words of earlier calls read as "not ready".

#ifndef LOADS
#define LOADS 8  // float4 per thread, a multiple of 4
#endif
#ifndef PREFETCH_TILES
#define PREFETCH_TILES 256  // how far ahead (in tiles) a block prefetches into L2
#endif
#ifndef LANE_WORDS
#define LANE_WORDS 1  // status words each lane reads per look-back round
#endif

constexpr int THREADS = 256;
constexpr int TILE = THREADS * LOADS * 4;
constexpr int WARPS = THREADS / 32;
constexpr int PACKS = LOADS / 4;  // ints of four 8-bit counts per thread
constexpr int WINDOW = 32 * LANE_WORDS;
constexpr int GROUPS_PER_LANE = LOADS * WARPS / 32;
constexpr unsigned long long FLAG_AGGREGATE = 1ull, FLAG_INCLUSIVE = 2ull;
constexpr unsigned NONE = 0xffffffffu;

__device__ __forceinline__ unsigned long long pack(unsigned epoch, unsigned long long flag, unsigned v) {
    return ((unsigned long long)epoch << 34) | (flag << 32) | v;
}

__device__ __forceinline__ unsigned flag_of(unsigned long long s, unsigned epoch) {
    return (s >> 34) == epoch ? (unsigned)((s >> 32) & 3ull) : 0u;
}

// A status word as L2 holds it, read by an atomic that changes nothing: on the
// H200 this took the reference from 82.1 to 77.1 us (1.28x -> 1.21x the copy
// floor, same run) against a volatile load (LDG.E.64.STRONG.SYS), which
// reference/stream_compaction.md gives with the phase stamps of both.
__device__ __forceinline__ unsigned long long read_status(unsigned long long* p) { return atomicOr(p, 0ull); }

__device__ __forceinline__ void write_status(unsigned long long* p, unsigned long long v) {
    *(volatile unsigned long long*)p = v;
}

// Kept elements before tile `tile`: the counts of its predecessors down to and
// including the nearest inclusive prefix. Run by one whole warp, tile > 0.
__device__ unsigned look_back(unsigned long long* status, int tile, unsigned epoch, int lane) {
    unsigned prefix = 0;
    for (int end = tile;; end -= WINDOW) {  // predecessors [0, end) not yet accounted for
        unsigned long long s[LANE_WORDS];
#pragma unroll
        for (int j = 0; j < LANE_WORDS; ++j) {
            int pred = end - 1 - (lane * LANE_WORDS + j);  // lane 0, j 0 is the nearest
            s[j] = pred >= 0 ? read_status(status + pred) : pack(epoch, FLAG_INCLUSIVE, 0u);
        }
        unsigned first_inclusive, first_missing;
        while (true) {
            unsigned my_inclusive = NONE, my_missing = NONE;
#pragma unroll
            for (int j = LANE_WORDS - 1; j >= 0; --j) {
                unsigned f = flag_of(s[j], epoch);
                if (f == FLAG_INCLUSIVE) my_inclusive = lane * LANE_WORDS + j;
                if (f == 0u) my_missing = lane * LANE_WORDS + j;
            }
            first_inclusive = __reduce_min_sync(0xffffffffu, my_inclusive);
            first_missing = __reduce_min_sync(0xffffffffu, my_missing);
            if (first_missing == NONE || first_missing > first_inclusive) break;
#pragma unroll
            for (int j = 0; j < LANE_WORDS; ++j)
                if (flag_of(s[j], epoch) == 0u) s[j] = read_status(status + end - 1 - (lane * LANE_WORDS + j));
        }
        unsigned c = 0;
#pragma unroll
        for (int j = 0; j < LANE_WORDS; ++j)
            if ((unsigned)(lane * LANE_WORDS + j) <= first_inclusive) c += (unsigned)s[j];
        prefix += __reduce_add_sync(0xffffffffu, c);
        if (first_inclusive != NONE) return prefix;
    }
}

// dst[0 .. n) = src(i) for i in 0 .. n: float4 stores from dst's first 16-byte
// boundary on when `vector` (dst's array is 16-byte aligned), scalar otherwise.
template <class Source>
__device__ __forceinline__ void write_run(float* dst, int n, bool vector, Source src) {
    const int t = threadIdx.x;
    int head = vector ? (int)((16 - ((uintptr_t)dst & 15)) & 15) / 4 : 0;
    if (head > n) head = n;
    if (t < head) __stcs(dst + t, src(t));
    const int quads = vector ? (n - head) / 4 : 0;
    float4* body = reinterpret_cast<float4*>(dst + head);
    for (int q = t; q < quads; q += THREADS) {
        int i = head + 4 * q;
        __stcs(body + q, make_float4(src(i), src(i + 1), src(i + 2), src(i + 3)));
    }
    for (int i = head + 4 * quads + t; i < n; i += THREADS) __stcs(dst + i, src(i));
}

// Brings the tile starting at element `base` into L2 with one bulk prefetch by
// thread 0: whole 16-byte units only (the instruction's rule; tiles start
// 16-byte aligned), none past the end.
__device__ __forceinline__ void prefetch_tile(const float* in, long long base, int N, int t) {
    if (t != 0 || base >= N) return;
    const long long elements = (long long)N - base < TILE ? (long long)N - base : TILE;
    const unsigned bytes = (unsigned)(elements * 4) & ~15u;
    if (bytes) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(in + base), "r"(bytes) : "memory");
}

__global__ void __launch_bounds__(THREADS, 4) compact_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                          int* count, int N, unsigned long long* status,
                                                          unsigned epoch, int tiles,
                                                          bool in_aligned, bool out_aligned) {
    __shared__ float staging[TILE];
    __shared__ int group_totals[LOADS * WARPS];  // kept elements per (load, warp) in tile order, then their exclusive scan
    __shared__ int tile_kept;
    __shared__ int tile_prefix;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    PHASE(0);
    const int tile_id = (int)blockIdx.x;
    const long long base = (long long)tile_id * TILE;
    const int elements = (int)(N - base < TILE ? N - base : TILE);

    // 1. load and rank within the tile
    float v[LOADS][4];
    if (in_aligned && elements == TILE) {
        const float4* src = reinterpret_cast<const float4*>(in + base);
#pragma unroll
        for (int k = 0; k < LOADS; ++k) {
            float4 q = __ldcs(src + t + k * THREADS);
            v[k][0] = q.x; v[k][1] = q.y; v[k][2] = q.z; v[k][3] = q.w;
        }
        if (tile_id + PREFETCH_TILES < tiles)  // after this tile's own loads: they come first
            prefetch_tile(in, (long long)(tile_id + PREFETCH_TILES) * TILE, N, t);
    } else {
#pragma unroll
        for (int k = 0; k < LOADS; ++k)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                int i = 4 * (t + k * THREADS) + c;
                v[k][c] = i < elements ? in[base + i] : 0.0f;  // 0 is not kept
            }
    }
    int packed[PACKS], inclusive[PACKS];  // this thread's kept count of load k in bits 8(k%4) .. of packed[k/4]
#pragma unroll
    for (int p = 0; p < PACKS; ++p) {
        packed[p] = 0;
#pragma unroll
        for (int k = 4 * p; k < 4 * p + 4; ++k) {
            int n = (v[k][0] > 0.0f) + (v[k][1] > 0.0f) + (v[k][2] > 0.0f) + (v[k][3] > 0.0f);
            packed[p] |= n << (8 * (k % 4));
        }
        inclusive[p] = packed[p];  // a warp's count per load is at most 128: the 8-bit fields never carry
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1)
#pragma unroll
        for (int p = 0; p < PACKS; ++p) {
            int y = __shfl_up_sync(0xffffffffu, inclusive[p], d);
            if (lane >= d) inclusive[p] += y;
        }
    if (lane == 31)
#pragma unroll
        for (int k = 0; k < LOADS; ++k) group_totals[k * WARPS + warp] = (inclusive[k / 4] >> (8 * (k % 4))) & 0xff;
    __syncthreads();
    PHASE(1);
    if (warp == 0) {  // exclusive scan of the (load, warp) totals in place, GROUPS_PER_LANE per lane
        int g[GROUPS_PER_LANE], sum = 0;
#pragma unroll
        for (int i = 0; i < GROUPS_PER_LANE; ++i) g[i] = group_totals[lane * GROUPS_PER_LANE + i], sum += g[i];
        int before = sum;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, before, d);
            if (lane >= d) before += y;
        }
        if (lane == 31) {
            tile_kept = before;
            write_status(status + tile_id, pack(epoch, tile_id == 0 ? FLAG_INCLUSIVE : FLAG_AGGREGATE, before));
        }
        before -= sum;
#pragma unroll
        for (int i = 0; i < GROUPS_PER_LANE; ++i) group_totals[lane * GROUPS_PER_LANE + i] = before, before += g[i];
    }
    __syncthreads();
    const int kept = tile_kept;
    int rank[LOADS];  // tile-local rank of this thread's first kept element of load k
#pragma unroll
    for (int k = 0; k < LOADS; ++k)
        rank[k] = group_totals[k * WARPS + warp] + ((inclusive[k / 4] - packed[k / 4]) >> (8 * (k % 4)) & 0xff);

    // 2. stage the kept elements in order
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
        int r = rank[k];
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (v[k][c] > 0.0f) staging[r++] = v[k][c];
    }

    // 3. look-back
    PHASE(2);
    if (warp == 0) {
        unsigned prefix = 0;
        if (tile_id > 0) {
            prefix = look_back(status, tile_id, epoch, lane);
            if (lane == 0) write_status(status + tile_id, pack(epoch, FLAG_INCLUSIVE, prefix + kept));
        }
        if (lane == 0) {
            tile_prefix = (int)prefix;
            if (tile_id == tiles - 1) *count = (int)prefix + kept;
        }
    }
    PHASE(3);
    __syncthreads();

    // 4. the kept run at [P, P + kept), the zero run ending at N - D
    const int P = tile_prefix;
    const int dropped_before = (int)base - P;
    write_run(out + P, kept, out_aligned, [&](int i) { return staging[i]; });
    write_run(out + (N - dropped_before - (elements - kept)), elements - kept, out_aligned,
              [](int) { return 0.0f; });
    PHASE(4);
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    static unsigned long long* status = nullptr;  // one word per tile
    static int capacity = 0;                       // tiles
    static unsigned epoch = 0;
    if (N <= 0) return;
    int tiles = (N + TILE - 1) / TILE;
    if (tiles > capacity) {
        if (status) cudaFree(status);
        if (cudaMalloc(&status, (size_t)tiles * sizeof(unsigned long long)) != cudaSuccess) {
            status = nullptr, capacity = 0;
            return;  // out of memory: output stays unwritten and the check says so
        }
        cudaMemset(status, 0, (size_t)tiles * sizeof(unsigned long long));  // epoch 0: never a live epoch
        capacity = tiles;
    }
    epoch = epoch % ((1u << 30) - 1) + 1;  // 1 .. 2^30 - 1
    bool in_aligned = ((uintptr_t)input & 15) == 0, out_aligned = ((uintptr_t)output & 15) == 0;
    compact_kernel<<<tiles, THREADS>>>(input, output, count, N, status, epoch, tiles,
                                       in_aligned, out_aligned);
}
