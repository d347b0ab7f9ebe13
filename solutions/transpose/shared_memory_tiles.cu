// A 32x32 tile goes through shared memory: a warp reads one tile row
// (coalesced), and after the barrier reads one tile column to write one output
// row (coalesced). The extra column of padding puts the 32 elements of a tile
// column in 32 different banks; without it, all 32 would hit one bank.
#include <cuda_runtime.h>

constexpr int TILE = 32, ROWS_PER_PASS = 8;

__global__ void transpose_tiles(const float* input, float* output, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    for (int i = threadIdx.y; i < TILE; i += ROWS_PER_PASS) {
        int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = input[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < TILE; i += ROWS_PER_PASS) {
        int c = c0 + i, r = r0 + threadIdx.x;  // output row c, column r
        if (c < cols && r < rows) output[(size_t)c * rows + r] = tile[threadIdx.x][i];
    }
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiles<<<grid, block>>>(input, output, rows, cols);
}
