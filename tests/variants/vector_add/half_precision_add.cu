// expect: wrong_output
// Adds in half precision (__half): 11 significant bits, and a range of 6e-8 .. 65504, so every test with more than a few elements is far out of tolerance.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void vadd_half(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = __half2float(__hadd(__float2half(A[i]), __float2half(B[i])));
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
    vadd_half<<<(N + 255) / 256, 256>>>(A, B, C, N);
}
