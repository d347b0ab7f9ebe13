#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>

// row_topk, tight threshold: reference/row_topk.cu with a threshold that
// passes ~38 of 1024 uniform keys (k = 32) instead of ~120, so the radix
// select that follows works on a third of the entries; the register passes use
// four independent chains instead of one 32-long dependent chain.
//
// Floor: 4*rows*cols + 8*rows*k bytes: 285 MB at the official 65536 x 1024,
// k = 32, ~71 us at 4 TB/s, a budget of a few tens of instructions per key.
//
// Order as one number: comp = (key ^ 0x80000000) << 32 | (0xFFFFFFFF - col)
// is larger exactly when the spec puts an element first (larger key; equal
// key, smaller column), and distinct for every element. The answer is the k
// largest comps of the row, in descending order.
//
// A row is read in chunks of 1024 columns, 32 keys per lane in registers
// (eight int4 loads per lane: lane l holds columns 128j + 4l .. 128j + 4l + 3).
// For each chunk:
//  1. a threshold from registers alone: every lane's two largest keys m1 >= m2;
//     count(t) = #(m1 >= t) + #(m2 >= t) keys of the chunk are >= t, so with
//     count(t) >= k every key of the chunk's top k is >= t. t is the largest
//     lane maximum with count(t) >= k (a warp bitonic sort of the 32 maxima,
//     then a binary search of 5 ballot rounds). After the first chunk a key
//     must also beat the running k-th best strictly (it has a later column);
//  2. the candidates, as comps, are appended (warp scan of per-lane counts) to
//     the best k so far in a per-warp shared-memory pool;
//  3. a radix select over the pool, 8 bits at a time from the top, with a
//     per-warp 256-bin histogram, finds the k-th largest comp; it stops as
//     soon as the bin at the boundary is taken whole (usually after two
//     passes on uniform keys); the k winners are compacted with ballots.
// At the end of the row the k winners are sorted by a warp bitonic sort
// (32 or 64 entries, one or two per lane) and written.
// Ties cost nothing special: comps are distinct, so equal keys are ordered
// by column in the same selection.

constexpr int KMAX = 64;
constexpr int PER_LANE = 32;
constexpr int CHUNK = 32 * PER_LANE;  // 1024 columns
constexpr int WARPS = 4;              // rows per block
constexpr int BINS = 256;
constexpr unsigned FULL = 0xffffffffu;

struct WarpScratch {
    unsigned long long best[KMAX];          // the best comps so far (held of them)
    unsigned long long pool[KMAX + CHUNK];  // best, then this chunk's candidates
    int hist[BINS];
};

__device__ __forceinline__ unsigned long long comp_of(int key, int col) {
    return ((unsigned long long)((unsigned)key ^ 0x80000000u) << 32) | (0xFFFFFFFFu - (unsigned)col);
}

__device__ __forceinline__ int key_of(unsigned long long comp) { return (int)((unsigned)(comp >> 32) ^ 0x80000000u); }

__device__ __forceinline__ int warp_min(int v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(FULL, v, o));
    return v;
}

// Descending bitonic sort of 32 * SLOTS comps, element s * 32 + lane in a[s].
template <int SLOTS>
__device__ __forceinline__ void warp_sort_descending(unsigned long long (&a)[SLOTS], int lane) {
    constexpr int N = 32 * SLOTS;
#pragma unroll
    for (int size = 2; size <= N; size <<= 1) {
#pragma unroll
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            if (stride == 32) {  // SLOTS == 2, size == 64: the partner is this lane's other slot
                unsigned long long hi = max(a[0], a[1]), lo = min(a[0], a[1]);
                a[0] = hi;
                a[1] = lo;
                continue;
            }
#pragma unroll
            for (int s = 0; s < SLOTS; ++s) {
                int i = s * 32 + lane;
                unsigned long long other = __shfl_xor_sync(FULL, a[s], stride);
                bool lower = (lane & stride) == 0;
                bool descending = (i & size) == 0;
                a[s] = lower == descending ? max(a[s], other) : min(a[s], other);
            }
        }
    }
}

// The k largest comps of pool[0, m) into best[0, k) (any order); m > k.
__device__ void select_k(WarpScratch& w, int m, int k, int lane) {
    unsigned long long prefix = 0, mask = 0;
    int need = k;
    for (int shift = 56;; shift -= 8) {
        for (int b = lane; b < BINS; b += 32) w.hist[b] = 0;
        __syncwarp();
        for (int i = lane; i < m; i += 32) {
            unsigned long long c = w.pool[i];
            if ((c & mask) == prefix) atomicAdd(&w.hist[(c >> shift) & 0xff], 1);
        }
        __syncwarp();
        int h[8], sum = 0;  // lane l owns digits 255 - 8l .. 248 - 8l, largest first
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            h[q] = w.hist[BINS - 1 - 8 * lane - q];
            sum += h[q];
        }
        int inclusive = sum;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int y = __shfl_up_sync(FULL, inclusive, d);
            if (lane >= d) inclusive += y;
        }
        int exclusive = inclusive - sum;
        unsigned crossing = __ballot_sync(FULL, exclusive < need && need <= inclusive);
        int owner = __ffs(crossing) - 1;
        int digit = 0, above = 0, in_bin = 0;
        if (lane == owner) {
            int run = exclusive;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                if (in_bin == 0 && run + h[q] >= need) {
                    digit = BINS - 1 - 8 * lane - q;
                    above = run;
                    in_bin = h[q];
                }
                run += h[q];
            }
        }
        digit = __shfl_sync(FULL, digit, owner);
        above = __shfl_sync(FULL, above, owner);
        in_bin = __shfl_sync(FULL, in_bin, owner);
        prefix |= (unsigned long long)digit << shift;
        mask |= 0xffull << shift;
        need -= above;
        __syncwarp();  // every lane has read the histogram before the next pass clears it
        if (in_bin == need || shift == 0) break;  // the boundary bin is taken whole
    }
    // winners: comps at or above the prefix in the decided bits (exactly k)
    int base = 0;
    for (int i0 = 0; i0 < m; i0 += 32) {
        int i = i0 + lane;
        unsigned long long c = i < m ? w.pool[i] : 0ull;
        bool win = i < m && (c & mask) >= prefix;
        unsigned ballot = __ballot_sync(FULL, win);
        if (win) w.best[base + __popc(ballot & ((1u << lane) - 1u))] = c;
        base += __popc(ballot);
    }
    __syncwarp();
}

// One chunk of a row: candidates into the pool, selection into best.
template <int P, bool FULL_CHUNK>
__device__ __forceinline__ void process_chunk(WarpScratch& w, const int* row, int c0, int cols, int k, int lane,
                                              int& held, int& kth_key) {
    int x[PER_LANE];
    if (FULL_CHUNK) {
        const int4* src = reinterpret_cast<const int4*>(row + c0) + lane;
#pragma unroll
        for (int j = 0; j < PER_LANE / 4; ++j) {
            int4 v = __ldcs(src + 32 * j);
            x[4 * j] = v.x; x[4 * j + 1] = v.y; x[4 * j + 2] = v.z; x[4 * j + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
            int col = c0 + 128 * (i / 4) + 4 * lane + (i % 4);
            x[i] = col < cols ? __ldcs(row + col) : INT_MIN;
        }
    }
    auto column = [&](int i) { return c0 + 128 * (i / 4) + 4 * lane + (i % 4); };

    // 1. threshold: each lane's two largest keys (four independent chains for
    // ILP), then the largest lane maximum t with count(t) >= k, where
    // count(t) = lanes whose largest key is >= t + lanes whose second is >= t
    // (distinct elements, so at least count(t) keys of the chunk are >= t and
    // the chunk's k-th key is too). ~38 of 1024 uniform keys pass for k = 32,
    // against ~120 for the smallest lane maximum. Absent columns hold INT_MIN:
    // they can only count when t == INT_MIN, and then every key passes.
    int a1[4], a2[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) a1[q] = a2[q] = INT_MIN;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        const int q = i & 3;
        a2[q] = max(a2[q], min(a1[q], x[i]));
        a1[q] = max(a1[q], x[i]);
    }
    int m1 = a1[0], m2 = a2[0];
#pragma unroll
    for (int q = 1; q < 4; ++q) {
        m2 = max(max(m2, a2[q]), min(m1, a1[q]));
        m1 = max(m1, a1[q]);
    }
    int sorted = m1;  // the lane maxima in descending order, one per lane
#pragma unroll
    for (int size = 2; size <= 32; size <<= 1) {
#pragma unroll
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            int other = __shfl_xor_sync(FULL, sorted, stride);
            bool lower = (lane & stride) == 0, descending = (lane & size) == 0;
            sorted = lower == descending ? max(sorted, other) : min(sorted, other);
        }
    }
    auto count_at_or_above = [&](int t) {
        return __popc(__ballot_sync(FULL, m1 >= t)) + __popc(__ballot_sync(FULL, m2 >= t));
    };
    int t;
    if (count_at_or_above(__shfl_sync(FULL, sorted, 31)) >= k) {
        int lo = 0, hi = 31;  // count(sorted[hi]) >= k; count grows with the index
        while (lo < hi) {
            int mid = (lo + hi) >> 1;
            if (count_at_or_above(__shfl_sync(FULL, sorted, mid)) >= k)
                hi = mid;
            else
                lo = mid + 1;
        }
        t = __shfl_sync(FULL, sorted, hi);
    } else {
        t = warp_min(m2);  // k > 32: every lane's second key is >= it, 64 >= k keys
    }
    long long lower = t;
    if (held == k) lower = max(lower, (long long)kth_key + 1);  // a later column must beat the k-th strictly
    if (lower > INT_MAX) return;
    const int bound = (int)lower;

    // 2. candidates appended to the best so far
    int part[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) part[i & 3] += x[i] >= bound && (FULL_CHUNK || column(i) < cols);
    const int mine = (part[0] + part[1]) + (part[2] + part[3]);
    int inclusive = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int y = __shfl_up_sync(FULL, inclusive, d);
        if (lane >= d) inclusive += y;
    }
    const int m = held + __shfl_sync(FULL, inclusive, 31);
    int slot = held + inclusive - mine;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i)
        if (x[i] >= bound && (FULL_CHUNK || column(i) < cols)) w.pool[slot++] = comp_of(x[i], column(i));
    for (int i = lane; i < held; i += 32) w.pool[i] = w.best[i];
    __syncwarp();

    // 3. the best k of the pool
    if (m <= k) {
        for (int i = lane; i < m; i += 32) w.best[i] = w.pool[i];
        __syncwarp();
        held = m;
    } else {
        select_k(w, m, k, lane);
        held = k;
    }
    if (held == k && c0 + CHUNK < cols) {  // another chunk follows: it needs the k-th key
        int least = INT_MAX;
        for (int i = lane; i < k; i += 32) least = min(least, key_of(w.best[i]));
        kth_key = warp_min(least);
    }
}

template <int P>
__global__ void __launch_bounds__(32 * WARPS, 5) topk_rows(const int* __restrict__ input, int* __restrict__ values,
                                                       int* __restrict__ indices, int rows, int cols, int k) {
    __shared__ WarpScratch scratch[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long r = (long long)blockIdx.x * WARPS + warp;
    if (r >= rows) return;
    WarpScratch& w = scratch[warp];
    const int* row = input + r * cols;
    int held = 0, kth_key = INT_MIN;
    for (int c0 = 0; c0 < cols; c0 += CHUNK) {
        bool aligned = ((uintptr_t)(row + c0) & 15) == 0;
        if (aligned && c0 + CHUNK <= cols)
            process_chunk<P, true>(w, row, c0, cols, k, lane, held, kth_key);
        else
            process_chunk<P, false>(w, row, c0, cols, k, lane, held, kth_key);
    }
    unsigned long long a[P];
#pragma unroll
    for (int s = 0; s < P; ++s) a[s] = s * 32 + lane < held ? w.best[s * 32 + lane] : 0ull;  // 0: below every comp
    warp_sort_descending<P>(a, lane);
#pragma unroll
    for (int s = 0; s < P; ++s) {
        int j = s * 32 + lane;
        if (j < k) {
            values[r * k + j] = key_of(a[s]);
            indices[r * k + j] = (int)(0xFFFFFFFFu - (unsigned)a[s]);
        }
    }
}

extern "C" void solve(const int* input, int* values, int* indices, int rows, int cols, int k) {
    if (rows <= 0 || cols <= 0 || k <= 0) return;
    int blocks = (rows + WARPS - 1) / WARPS;
    if (k <= 32)
        topk_rows<1><<<blocks, 32 * WARPS>>>(input, values, indices, rows, cols, k);
    else
        topk_rows<2><<<blocks, 32 * WARPS>>>(input, values, indices, rows, cols, k);
}
