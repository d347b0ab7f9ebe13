// expect: wrong_output
// A rounded to half precision to halve the bytes: 2^-11 relative error per element (errors ~0.06 at N = 8192, atol is 0.02), and large_cancel's A (about 2^20) overflows to inf.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void gemv_half_A(const float* A, const float* x, float* y, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;
    float t = 0.0f;
    for (int j = 0; j < N; ++j) t = fmaf(__half2float(__float2half(A[(long long)i * N + j])), x[j], t);
    y[i] = t;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    gemv_half_A<<<(M + 127) / 128, 128>>>(A, x, y, M, N);
}
