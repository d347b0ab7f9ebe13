// The obvious first attempt: one thread per input element. Reads along a row
// are coalesced; the writes of a warp land `rows` floats apart, one 32-byte
// sector each, so the write side moves 8x the bytes it needs.
#include <cuda_runtime.h>

__global__ void transpose_naive(const float* input, float* output, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) output[(size_t)c * rows + r] = input[(size_t)r * cols + c];
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid((cols + 31) / 32, (rows + 7) / 8);
    transpose_naive<<<grid, block>>>(input, output, rows, cols);
}
