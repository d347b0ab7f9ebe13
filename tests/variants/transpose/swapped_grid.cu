// expect: unwritten_output
// Tiles the grid by the output's shape but indexes the input with it: on non-square matrices the blocks cover the wrong region.
#include <cuda_runtime.h>

__global__ void tr(const float* in, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);  // x should cover rows here
    tr<<<grid, block>>>(input, output, rows, cols);
}
