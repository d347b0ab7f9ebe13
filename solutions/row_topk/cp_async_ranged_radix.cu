#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>

// row_topk: one warp per row as in the reference (threshold from registers,
// candidates, radix select, warp bitonic sort of the winners), rebuilt to
// issue fewer instructions and to keep the next row loading while a row is
// selected, without more registers per warp:
//
//  * persistent warps (a grid of resident blocks; warp g takes rows g, g + W,
//    ...): each warp copies its next 1024-column chunk into a second shared
//    buffer with cp.async while it selects from the first, so the stream
//    never waits for the selection and the selection never waits for DRAM;
//    the keys cost no registers while in flight;
//  * candidates are recorded as a bit per key and appended by a loop over the
//    set bits (~4 per lane on uniform keys), as 16-bit chunk offsets: the key
//    is read back from the shared buffer, so the pool is 2 KB, not 8.7 KB;
//  * the radix select's first digit covers the pool's key range [lo, hi]
//    (lo = the threshold, hi = the largest key) rather than the top 8 bits of
//    the int32 range: ~120 candidates over 256 bins, so the boundary bin is
//    usually taken whole after one pass instead of two;
//  * warp-wide minima and maxima with one REDUX instruction each.
//
// Order as one number, as in the reference: comp = (key ^ 0x80000000) << 32 |
// (0xFFFFFFFF - col), larger exactly when the spec puts the element first.
// The select works on v = comp - ((lo ^ 0x80000000) << 32): the same order
// for every key >= lo, with the high word key - lo in [0, hi - lo].

constexpr int KMAX = 64;
constexpr int PER_LANE = 32;
constexpr int CHUNK = 32 * PER_LANE;  // 1024 columns
constexpr int BINS = 256;
constexpr unsigned FULL = 0xffffffffu;
#ifndef WARPS
#define WARPS 2  // warps (rows in flight) per block
#endif
#ifndef STAGES
#define STAGES 2  // 2: the next chunk loads during the whole selection (11.5 KB of shared memory per warp,
                  // 18 warps per SM); 1: it loads during the final sort only (7.5 KB, more warps)
#endif
#ifndef MIN_BLOCKS  // blocks per SM that shared memory allows (233,472 B per SM, 1 KB reserved per block),
                    // given to __launch_bounds__ so that registers never cost a block: without it the
                    // compiler takes 155 registers (12 warps per SM); with it 56-96, no spills (ptxas, sm_90)
#define MIN_BLOCKS (STAGES == 2 ? 9 : 14)
#endif
constexpr int MIN_ROWS_PER_WARP = 4;

struct __align__(16) WarpScratch {
    int buf[STAGES][CHUNK];         // the chunk being selected (and the next one, in flight)
    unsigned long long best[KMAX];  // the best comps of the row so far (held of them)
    unsigned short cand[CHUNK];     // this chunk's candidates, as offsets in the chunk
    int hist[BINS];
};

__device__ __forceinline__ unsigned long long comp_of(int key, int col) {
    return ((unsigned long long)((unsigned)key ^ 0x80000000u) << 32) | (0xFFFFFFFFu - (unsigned)col);
}
__device__ __forceinline__ int key_of(unsigned long long comp) { return (int)((unsigned)(comp >> 32) ^ 0x80000000u); }
__device__ __forceinline__ int col_of(unsigned long long comp) { return (int)(0xFFFFFFFFu - (unsigned)comp); }

// offset in the chunk of key i of a lane: lane l holds columns 128j + 4l .. 128j + 4l + 3
__device__ __forceinline__ int offset_of(int i, int lane) { return 128 * (i >> 2) + 4 * lane + (i & 3); }

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_4(void* dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_u32(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The chunk of `row` from column c0 into dst (columns past cols left alone).
// Each lane copies exactly the words it reads back in process_chunk.
__device__ __forceinline__ void issue_chunk(int* dst, const int* row, int c0, int cols, bool vector, int lane) {
    if (vector) {  // 16-byte aligned rows, cols % 4 == 0: an int4 is either all in the row or all past it
#pragma unroll
        for (int j = 0; j < PER_LANE / 4; ++j) {
            int off = 128 * j + 4 * lane;
            if (c0 + off < cols) cp_async_16(dst + off, row + c0 + off);
        }
    } else {
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
            int off = offset_of(i, lane);
            if (c0 + off < cols) cp_async_4(dst + off, row + c0 + off);
        }
    }
    cp_async_commit();
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

struct Pool {  // best[0, held) then the chunk's candidates cand[0, m - held), in v = comp - base
    const WarpScratch& w;
    const int* chunk;
    int c0, held, m;
    unsigned long long base;  // (lo ^ 0x80000000) << 32
    __device__ __forceinline__ unsigned long long v(int i) const {
        if (i < held) return w.best[i] - base;
        int off = w.cand[i - held];
        return comp_of(chunk[off], c0 + off) - base;
    }
};

// The k largest of the pool (m > k entries) into best[0, k), any order.
__device__ void select_k(WarpScratch& w, const Pool& pool, int k, int first_shift, int lane) {
    const int m = pool.m;
    unsigned long long prefix = 0, mask = 0;
    int need = k;
    for (int shift = first_shift;; shift = max(shift - 8, 0)) {
        for (int b = lane; b < BINS; b += 32) w.hist[b] = 0;
        __syncwarp();
        for (int i = lane; i < m; i += 32) {
            unsigned long long v = pool.v(i);
            if ((v & mask) == prefix) atomicAdd(&w.hist[(v >> shift) & 0xff], 1);
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
        // a final pass below 8 bits overlaps bits already decided: they are equal in
        // every entry still in the running, so OR-ing them in again changes nothing
        prefix |= (unsigned long long)digit << shift;
        mask |= 0xffull << shift;
        need -= above;
        __syncwarp();  // every lane has read the histogram before the next pass clears it
        if (in_bin == need || shift == 0) break;  // the boundary bin is taken whole
    }
    // winners: at or above the prefix in the decided bits (exactly k), compacted
    // in place: an entry moves only to a lower index, read before any write
    int base = 0;
    for (int i0 = 0; i0 < m; i0 += 32) {
        int i = i0 + lane;
        unsigned long long v = i < m ? pool.v(i) : 0ull;
        bool win = i < m && (v & mask) >= prefix;
        unsigned ballot = __ballot_sync(FULL, win);
        __syncwarp();
        if (win) w.best[base + __popc(ballot & ((1u << lane) - 1u))] = v + pool.base;
        base += __popc(ballot);
    }
    __syncwarp();
}

// One chunk (in shared memory) of a row: its candidates and the best k so far.
// held_lo and held_hi bound the keys of best[0, held) (valid when held > 0).
template <int P, bool FULL_CHUNK>
__device__ __forceinline__ void process_chunk(WarpScratch& w, const int* chunk, int c0, int cols, int k, int lane,
                                              int& held, int& held_lo, int& held_hi) {
    auto valid = [&](int i) { return FULL_CHUNK || c0 + offset_of(i, lane) < cols; };
    int x[PER_LANE];
#pragma unroll
    for (int j = 0; j < PER_LANE / 4; ++j) {
        int4 v = reinterpret_cast<const int4*>(chunk)[32 * j + lane];
        x[4 * j] = v.x; x[4 * j + 1] = v.y; x[4 * j + 2] = v.z; x[4 * j + 3] = v.w;
    }
    if (!FULL_CHUNK)
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i)
            if (!valid(i)) x[i] = INT_MIN;  // never copied: garbage

    // threshold: the smallest of the lanes' P-th largest keys has >= 32P >= k keys of the chunk at or above it
    int m1 = INT_MIN, m2 = INT_MIN, present = 0;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        if (P == 2) m2 = max(m2, min(m1, x[i]));
        m1 = max(m1, x[i]);
        if (!FULL_CHUNK) present += valid(i);
    }
    if (FULL_CHUNK) present = PER_LANE;
    const bool counts = present >= P;
    const int t = __reduce_min_sync(FULL, counts ? (P == 2 ? m2 : m1) : INT_MAX);
    long long lower = __popc(__ballot_sync(FULL, counts)) * P >= k ? (long long)t : (long long)INT_MIN;
    if (held == k) lower = max(lower, (long long)held_lo + 1);  // a later column must beat the k-th strictly
    if (lower > INT_MAX) return;
    const int bound = (int)lower;

    // candidates: a bit per key, then a loop over the set bits
    unsigned bits = 0;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i)
        if (x[i] >= bound && valid(i)) bits |= 1u << i;
    const int mine = __popc(bits);
    int inclusive = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int y = __shfl_up_sync(FULL, inclusive, d);
        if (lane >= d) inclusive += y;
    }
    const int total = __shfl_sync(FULL, inclusive, 31);
    if (total == 0) return;
    for (int slot = inclusive - mine; bits; bits &= bits - 1)
        w.cand[slot++] = (unsigned short)offset_of(__ffs(bits) - 1, lane);
    __syncwarp();

    const int m = held + total;
    if (m <= k) {
        for (int i = lane; i < total; i += 32) {
            int off = w.cand[i];
            w.best[held + i] = comp_of(chunk[off], c0 + off);
        }
        held = m;
    } else {
        // the pool's keys lie in [lo, hi]: the first radix digit spans that range
        const int lo = held > 0 ? min(bound, held_lo) : bound;
        const int hi = max(__reduce_max_sync(FULL, m1), held > 0 ? held_hi : INT_MIN);
        const unsigned range = (unsigned)hi - (unsigned)lo;
        const int range_bits = 32 - __clz(range);
        const Pool pool{w, chunk, c0, held, m, (unsigned long long)((unsigned)lo ^ 0x80000000u) << 32};
        select_k(w, pool, k, 32 + max(range_bits - 8, 0), lane);
        held = k;
    }
    __syncwarp();
    if (c0 + CHUNK < cols) {  // another chunk follows: the bounds of best's keys
        int least = INT_MAX, most = INT_MIN;
        for (int i = lane; i < held; i += 32) {
            int key = key_of(w.best[i]);
            least = min(least, key);
            most = max(most, key);
        }
        held_lo = __reduce_min_sync(FULL, least);
        held_hi = __reduce_max_sync(FULL, most);
    }
}

template <int P>
__device__ __forceinline__ void finish_row(const WarpScratch& w, int* values, int* indices, long long r, int k,
                                           int held, int lane) {
    unsigned long long a[P];
#pragma unroll
    for (int s = 0; s < P; ++s) a[s] = s * 32 + lane < held ? w.best[s * 32 + lane] : 0ull;  // 0: below every comp
    warp_sort_descending<P>(a, lane);
#pragma unroll
    for (int s = 0; s < P; ++s) {
        int j = s * 32 + lane;
        if (j < k) {
            values[r * k + j] = key_of(a[s]);
            indices[r * k + j] = col_of(a[s]);
        }
    }
}

template <int P>
__global__ void __launch_bounds__(32 * WARPS, MIN_BLOCKS) topk_rows(const int* __restrict__ input, int* __restrict__ values,
                                                       int* __restrict__ indices, int rows, int cols, int k,
                                                       bool vector) {
    __shared__ WarpScratch scratch[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int stride = gridDim.x * WARPS;
    int r = blockIdx.x * WARPS + warp;
    if (r >= rows) return;
    WarpScratch& w = scratch[warp];
    int c0 = 0, stage = 0;
    issue_chunk(w.buf[0], input + (long long)r * cols, 0, cols, vector, lane);
    int held = 0, held_lo = INT_MAX, held_hi = INT_MIN;
    for (;;) {
        // the warp's next chunk: the rest of this row, then its next row
        int next_r = r, next_c0 = c0 + CHUNK;
        if (next_c0 >= cols) {
            next_r = r + stride;
            next_c0 = 0;
        }
        const bool more = next_r < rows;
        if (STAGES == 2) {
            if (more)
                issue_chunk(w.buf[stage ^ 1], input + (long long)next_r * cols, next_c0, cols, vector, lane);
            else
                cp_async_commit();  // an empty group keeps the wait below uniform
            cp_async_wait<1>();     // this chunk has landed (its own lane's words) ...
        } else {
            cp_async_wait<0>();
        }
        __syncwarp();  // ... and every lane's
        const int* chunk = w.buf[stage];
        if (c0 + CHUNK <= cols)
            process_chunk<P, true>(w, chunk, c0, cols, k, lane, held, held_lo, held_hi);
        else
            process_chunk<P, false>(w, chunk, c0, cols, k, lane, held, held_lo, held_hi);
        if (STAGES == 1) {
            __syncwarp();  // the chunk is no longer read: refill it while the row is sorted and stored
            if (more) issue_chunk(w.buf[0], input + (long long)next_r * cols, next_c0, cols, vector, lane);
        }
        if (next_c0 == 0) {
            finish_row<P>(w, values, indices, r, k, held, lane);
            held = 0;
        }
        __syncwarp();  // every lane is done with this buffer before the next iteration refills it
        if (!more) break;
        r = next_r;
        c0 = next_c0;
        stage ^= STAGES - 1;
    }
}

extern "C" void solve(const int* input, int* values, int* indices, int rows, int cols, int k) {
    if (rows <= 0 || cols <= 0 || k <= 0) return;
    static int sms = 0, per_sm1 = 0, per_sm2 = 0;  // device properties, read once
    if (sms == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm1, topk_rows<1>, 32 * WARPS, 0);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm2, topk_rows<2>, 32 * WARPS, 0);
    }
    const bool vector = ((uintptr_t)input & 15) == 0 && cols % 4 == 0;
    // at least MIN_ROWS_PER_WARP rows per warp: the first row's load is the only one not overlapped
    const int needed = (int)(((long long)rows + WARPS * MIN_ROWS_PER_WARP - 1) / (WARPS * MIN_ROWS_PER_WARP));
    const int resident = sms * max(k <= 32 ? per_sm1 : per_sm2, 1);
    const int blocks = min(needed, resident);
    if (k <= 32)
        topk_rows<1><<<blocks, 32 * WARPS>>>(input, values, indices, rows, cols, k, vector);
    else
        topk_rows<2><<<blocks, 32 * WARPS>>>(input, values, indices, rows, cols, k, vector);
}
