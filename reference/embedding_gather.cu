#include <cuda_runtime.h>
#include <stdint.h>

// embedding_gather reference: output[i, :] = table[indices[i], :].
//
// Nothing is computed, so the floor is the bytes: each output row read from
// the table and written once. The output is treated as one flat array of
// vectors (float4 when dim % 4 == 0, float2 when dim % 2 == 0, else float):
// consecutive threads own consecutive vectors, so every warp reads and writes
// contiguous runs of at least 512 bytes (a row of dim = 256 is 1 KB), whatever
// dim is. Each thread issues all UNROLL index loads, then all UNROLL table
// loads, before its first store: 64 bytes of float4s in flight per thread
// (~128 KB per SM at full occupancy, against the ~30 KB Little's law asks for
// at 4 TB/s and ~1 us latency), and no thread waits on one index at a time.
// Table reads keep the default caching (repeated indices then hit L2); output
// stores stream past it (.cs): nothing reads them again.
//
// Tails: the last block checks bounds; rows whose length is not a multiple of
// the vector width use the narrower vector, so no row is split mid-vector.
// Pointers that are not aligned to the vector (never the case for cudaMalloc'd
// arrays) also take the float path.

constexpr int THREADS = 256;
constexpr int UNROLL = 4;

template <typename V>
__global__ void __launch_bounds__(THREADS)
    gather_rows(const int* __restrict__ indices, const V* __restrict__ table, V* __restrict__ output, int row_vecs,
                int total_vecs) {
    int base = blockIdx.x * (THREADS * UNROLL) + threadIdx.x;
    int row[UNROLL];
    V v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        int e = base + k * THREADS;
        row[k] = e < total_vecs ? __ldg(indices + e / row_vecs) : 0;
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        int e = base + k * THREADS;
        if (e < total_vecs) v[k] = __ldg(table + (size_t)row[k] * row_vecs + (e % row_vecs));
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        int e = base + k * THREADS;
        if (e < total_vecs) __stcs(output + e, v[k]);
    }
}

template <typename V>
static void launch(const int* indices, const float* table, float* output, int num_indices, int dim) {
    constexpr int width = sizeof(V) / sizeof(float);
    int row_vecs = dim / width;
    int total = num_indices * row_vecs;  // < 2^31 by the constraints
    int per_block = THREADS * UNROLL;
    gather_rows<V><<<(total + per_block - 1) / per_block, THREADS>>>(
        indices, reinterpret_cast<const V*>(table), reinterpret_cast<V*>(output), row_vecs, total);
}

extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    uintptr_t addresses = (uintptr_t)table | (uintptr_t)output;
    if (dim % 4 == 0 && (addresses & 15) == 0)
        launch<float4>(indices, table, output, num_indices, dim);
    else if (dim % 2 == 0 && (addresses & 7) == 0)
        launch<float2>(indices, table, output, num_indices, dim);
    else
        launch<float>(indices, table, output, num_indices, dim);
}
