// gemv reference: y = A x, A streamed from DRAM once at full bandwidth.
//
// A block of THREADS threads owns ROWS = 4 consecutive rows and walks their
// columns together: each thread loads one unit of x (a float4 when rows are
// 16-byte aligned) and uses it for all four rows, so x is read from L2 once per
// four rows instead of once per row, and every thread has 4 (x2, unrolled)
// independent 16-byte loads of A in flight. The four partial sums are reduced
// with shuffles, then across the block's warps in shared memory.
//
// Rows of A are the only large traffic: 8192 x 8192 is 268 MB of A against
// 32 KB of x. Three shapes need more than that one kernel:
// - few rows (M = 1: a single long row): one block per four rows would leave
//   the GPU idle, so the columns are also split across blocks (blockIdx.y) and
//   the partial sums meet in y by atomicAdd, after y is zeroed;
// - short rows (N <= 16): a thread per row, whose consecutive rows make a
//   warp's loads contiguous anyway;
// - rows narrower than a 256-thread block: THREADS shrinks (down to one warp)
//   so most threads still have a unit to load.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int ROWS = 4;
constexpr int UNROLL = 2;
constexpr unsigned FULL = 0xffffffffu;

template <bool VEC4>
struct Unit;
template <>
struct Unit<true> {
    using type = float4;
    static constexpr int width = 4;
    static __device__ __forceinline__ float dot(float4 a, float4 b, float acc) {
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
        acc = fmaf(a.z, b.z, acc);
        return fmaf(a.w, b.w, acc);
    }
};
template <>
struct Unit<false> {
    using type = float;
    static constexpr int width = 1;
    static __device__ __forceinline__ float dot(float a, float b, float acc) { return fmaf(a, b, acc); }
};

// Rows [row0, row0 + ROWS) of A (those below M), units [begin, end) of each.
// SPLIT: several blocks share these rows, so the result is added to y (zeroed
// beforehand) instead of stored.
template <int THREADS, bool VEC4, bool SPLIT>
__global__ __launch_bounds__(THREADS) void gemv_rows(const float* __restrict__ A, const float* __restrict__ x,
                                                     float* __restrict__ y, int M, int N, int units_per_split) {
    using T = typename Unit<VEC4>::type;
    constexpr int WARPS = THREADS / 32;
    __shared__ float partial[WARPS][ROWS];

    const int units = N / Unit<VEC4>::width;
    const int row0 = blockIdx.x * ROWS;
    const int begin = SPLIT ? blockIdx.y * units_per_split : 0;
    const int end = SPLIT ? min(units, begin + units_per_split) : units;
    // Rows past M alias the last row: loads stay in bounds, their sums are dropped.
    const T* a[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
        a[r] = reinterpret_cast<const T*>(A + (size_t)min(row0 + r, M - 1) * N);
    const T* xs = reinterpret_cast<const T*>(x);

    float acc[ROWS] = {};
    int u = begin + threadIdx.x;
    for (; u + (UNROLL - 1) * THREADS < end; u += UNROLL * THREADS) {
        T xv[UNROLL], av[UNROLL][ROWS];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            xv[k] = __ldg(xs + u + k * THREADS);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) av[k][r] = __ldcs(a[r] + u + k * THREADS);  // streamed once
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = Unit<VEC4>::dot(av[k][r], xv[k], acc[r]);
    }
    for (; u < end; u += THREADS) {
        T xv = __ldg(xs + u);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] = Unit<VEC4>::dot(__ldcs(a[r] + u), xv, acc[r]);
    }

#pragma unroll
    for (int r = 0; r < ROWS; ++r)
        for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(FULL, acc[r], offset);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (WARPS > 1) {
        if (lane == 0) {
#pragma unroll
            for (int r = 0; r < ROWS; ++r) partial[warp][r] = acc[r];
        }
        __syncthreads();
    }
    if (threadIdx.x < ROWS && row0 + (int)threadIdx.x < M) {
        const int r = threadIdx.x;
        float sum = acc[r];  // warp 0's total for this row (lane r holds it after the xor shuffles)
        if (WARPS > 1) {
            sum = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) sum += partial[w][r];
        }
        if (SPLIT)
            atomicAdd(y + row0 + r, sum);
        else
            y[row0 + r] = sum;
    }
}

// Rows of at most 16 elements: one thread per row. Neighbouring threads read
// neighbouring rows, so a warp's loads cover one contiguous stretch of A.
__global__ void gemv_short_rows(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                                int M, int N) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;
    const float* row = A + (size_t)i * N;
    float sum = 0.0f;
    for (int j = 0; j < N; ++j) sum = fmaf(__ldcs(row + j), __ldg(x + j), sum);
    y[i] = sum;
}

int multiprocessors() {
    static int count = 0;
    if (count == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
        if (count <= 0) count = 132;
    }
    return count;
}

template <int THREADS, bool VEC4>
void launch_rows(const float* A, const float* x, float* y, int M, int N) {
    const int units = N / Unit<VEC4>::width;
    const int row_blocks = (M + ROWS - 1) / ROWS;
    // Fewer row blocks than one wave of 2048 threads per SM leaves SMs idle:
    // then split the columns too, to about two waves.
    const int wave = multiprocessors() * (2048 / THREADS);
    const int max_splits = (units + UNROLL * THREADS - 1) / (UNROLL * THREADS);
    const int splits = row_blocks >= wave ? 1 : min(max_splits, (2 * wave + row_blocks - 1) / row_blocks);
    if (splits <= 1) {
        gemv_rows<THREADS, VEC4, false><<<row_blocks, THREADS>>>(A, x, y, M, N, units);
        return;
    }
    int units_per_split = (units + splits - 1) / splits;
    units_per_split = (units_per_split + THREADS - 1) / THREADS * THREADS;  // whole passes of the block
    const int used_splits = (units + units_per_split - 1) / units_per_split;
    cudaMemsetAsync(y, 0, (size_t)M * sizeof(float));
    gemv_rows<THREADS, VEC4, true><<<dim3(row_blocks, used_splits), THREADS>>>(A, x, y, M, N, units_per_split);
}

template <bool VEC4>
void launch_by_width(const float* A, const float* x, float* y, int M, int N) {
    const int units = N / Unit<VEC4>::width;
    // The smallest block whose threads each get at least two units (one full
    // unrolled step), one warp at the least.
    if (units >= 2 * 256)
        launch_rows<256, VEC4>(A, x, y, M, N);
    else if (units >= 2 * 128)
        launch_rows<128, VEC4>(A, x, y, M, N);
    else if (units >= 2 * 64)
        launch_rows<64, VEC4>(A, x, y, M, N);
    else
        launch_rows<32, VEC4>(A, x, y, M, N);
}

}  // namespace

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    if (N <= 16) {
        gemv_short_rows<<<(M + 255) / 256, 256>>>(A, x, y, M, N);
        return;
    }
    const bool aligned = N % 4 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(x) % 16 == 0;
    if (aligned)
        launch_by_width<true>(A, x, y, M, N);
    else
        launch_by_width<false>(A, x, y, M, N);
}
