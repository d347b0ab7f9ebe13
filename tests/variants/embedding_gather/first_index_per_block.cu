// expect: wrong_output
// Flat float-per-thread copy that reads one index per block (the row of the block's first element) to save index loads: right only where a block's 256 elements fall in one row, i.e. when dim is a multiple of 256; elsewhere later rows copy the wrong table row.
#include <cuda_runtime.h>

__global__ void gather_block_index(const int* indices, const float* table, float* output, int num_indices, int dim) {
    __shared__ int row;
    int first = blockIdx.x * blockDim.x;
    if (threadIdx.x == 0) row = indices[first / dim];
    __syncthreads();
    int e = first + threadIdx.x;
    if (e < num_indices * dim) output[e] = table[(size_t)row * dim + e % dim];
}

extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    int total = num_indices * dim;
    gather_block_index<<<(total + 255) / 256, 256>>>(indices, table, output, num_indices, dim);
}
