// expect: unwritten_output
// Copies each row four floats at a time and stops at the last whole group of four: when dim is not a multiple of 4 the last dim % 4 columns of every row are never written (dim = 1, 2, 3 write nothing).
#include <cuda_runtime.h>

__global__ void copy_quads(const int* indices, const float* table, float* output, int dim) {
    int i = blockIdx.x;
    const float* src = table + (size_t)indices[i] * dim;
    float* dst = output + (size_t)i * dim;
    for (int d = 4 * threadIdx.x; d + 3 < dim; d += 4 * blockDim.x) {
        float a = src[d], b = src[d + 1], c = src[d + 2], e = src[d + 3];
        dst[d] = a;
        dst[d + 1] = b;
        dst[d + 2] = c;
        dst[d + 3] = e;
    }
}

extern "C" void solve(const int* indices, const float* table, float* output, int num_indices, int vocab, int dim) {
    copy_quads<<<num_indices, 64>>>(indices, table, output, dim);
}
