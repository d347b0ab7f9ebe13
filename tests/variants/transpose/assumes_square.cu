// expect: unwritten_output
// Written for a square matrix: uses cols as the output row length where it must be rows (and skips what would land outside), so on non-square matrices outputs are misplaced and some never written.
#include <cuda_runtime.h>

__global__ void tr(const float* in, float* out, int rows, int cols) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols && (size_t)c * cols + r < (size_t)rows * cols) out[(size_t)c * cols + r] = in[(size_t)r * cols + c];
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    tr<<<grid, block>>>(input, output, rows, cols);
}
