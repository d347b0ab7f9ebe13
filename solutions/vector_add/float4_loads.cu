#include <cuda_runtime.h>

// One float4 (16 bytes) per thread instead of one float: a quarter of the
// load and store instructions for the same bytes, and each warp moves 512
// contiguous bytes per instruction. cudaMalloc'd arrays are 256-byte aligned,
// so A, B and C can be read as float4 (a general routine would check). The
// N % 4 elements past the last float4 are added one by one.
__global__ void add4(const float4* A, const float4* B, float4* C, int n4, const float* a, const float* b, float* c,
                     int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = A[i], y = B[i];
        C[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    if (i < N - 4 * n4) c[4 * n4 + i] = a[4 * n4 + i] + b[4 * n4 + i];  // the tail, by threads 0..2
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
    int n4 = N / 4;
    int threads = 256;
    int work = n4 > 3 ? n4 : 3;
    int blocks = (work + threads - 1) / threads;
    add4<<<blocks, threads>>>((const float4*)A, (const float4*)B, (float4*)C, n4, A, B, C, N);
}
