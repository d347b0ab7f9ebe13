// expect: pass
// One warp per output row in a grid-stride loop over rows: lane 0's index is broadcast with a shuffle, the lanes copy the row in 32-float strides with plain float loads (no vector width, so every dim is the same code).
#include <cuda_runtime.h>

__global__ void copy_rows(const int* indices, const float* table, float* output, int num_indices, int dim) {
    int lane = threadIdx.x & 31;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int warps = (gridDim.x * blockDim.x) >> 5;
    for (int i = warp; i < num_indices; i += warps) {
        int row = __shfl_sync(0xffffffffu, lane == 0 ? indices[i] : 0, 0);
        const float* src = table + (size_t)row * dim;
        float* dst = output + (size_t)i * dim;
        for (int d = lane; d < dim; d += 32) dst[d] = src[d];
    }
}

extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    int warps_needed = num_indices;
    int blocks = (warps_needed + 7) / 8;
    if (blocks > 132 * 16) blocks = 132 * 16;
    copy_rows<<<blocks, 256>>>(indices, table, output, num_indices, dim);
}
