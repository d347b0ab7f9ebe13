// expect: pass
// Independent correct design: 16x16 tiles, one element per thread, unpadded shared memory, 2D grid over output tiles.
#include <cuda_runtime.h>

__global__ void tr(const float* in, float* out, int rows, int cols) {
    __shared__ float t[16][16];
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r < rows && c < cols) t[threadIdx.y][threadIdx.x] = in[(size_t)r * cols + c];
    __syncthreads();
    int orow = blockIdx.x * 16 + threadIdx.y, ocol = blockIdx.y * 16 + threadIdx.x;
    if (orow < cols && ocol < rows) out[(size_t)orow * rows + ocol] = t[threadIdx.x][threadIdx.y];
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    dim3 block(16, 16), grid((cols + 15) / 16, (rows + 15) / 16);
    tr<<<grid, block>>>(input, output, rows, cols);
}
