// expect: wrong_output
// Reads the table as if it were stored column by column (element (row, d) at d*vocab + row): every read stays inside the table, so nothing crashes, but only dim = 1 or vocab = 1 comes out right.
#include <cuda_runtime.h>

__global__ void gather_transposed(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < num_indices * dim) {
        int i = e / dim, d = e % dim;
        output[e] = table[(size_t)d * vocab + indices[i]];
    }
}

extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    int total = num_indices * dim;
    gather_transposed<<<(total + 255) / 256, 256>>>(indices, table, output, num_indices, vocab, dim);
}
