// expect: unwritten_output
// float4 loads with no scalar epilogue: the last N % 4 elements are never written (N = 1, 2, 3, 31, ... fail).
#include <cuda_runtime.h>

__global__ void vadd4(const float4* A, const float4* B, float4* C, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 a = A[i], b = B[i];
        C[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
    int n4 = N / 4;
    vadd4<<<(n4 + 255) / 256 + 1, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4);
}
