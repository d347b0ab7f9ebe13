// __constant__ memory and __device__ globals through the symbol API.
#include <cuda_runtime.h>

__constant__ float c_coeffs[8];
__constant__ int c_scale;
__device__ int d_calls;
__device__ float d_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};

__global__ void poly(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&d_calls, 1);
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 7; k >= 0; k--) acc = acc * x[i] + c_coeffs[k];
    y[i] = acc * c_scale + d_table[i & 3];
}

extern "C" void solve(const float* x, float* y, int n, const float* coeffs, int* calls) {
    int scale = 3, zero = 0;
    cudaMemcpyToSymbol(c_coeffs, coeffs, 8 * sizeof(float));
    cudaMemcpyToSymbol(c_scale, &scale, sizeof(int));
    cudaMemcpyToSymbol(d_calls, &zero, sizeof(int));
    poly<<<(n + 63) / 64, 64>>>(x, y, n);
    poly<<<(n + 63) / 64, 64>>>(x, y, n);
    cudaMemcpyFromSymbol(calls, d_calls, sizeof(int));
}
