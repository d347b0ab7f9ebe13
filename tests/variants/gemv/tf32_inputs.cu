// expect: wrong_output
// A and x rounded to TF32 (10 mantissa bits, nearest) before a float32 accumulation, as tensor cores in TF32 mode do: errors ~0.1 at N = 8192, five times atol.
#include <cuda_runtime.h>

__device__ float to_tf32(float v) {
    unsigned b = __float_as_uint(v);
    b = (b + 0xFFFu + ((b >> 13) & 1u)) & 0xFFFFE000u;
    return __uint_as_float(b);
}

__global__ void gemv_tf32(const float* A, const float* x, float* y, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;
    float t = 0.0f;
    for (int j = 0; j < N; ++j) t = fmaf(to_tf32(A[(long long)i * N + j]), to_tf32(x[j]), t);
    y[i] = t;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    gemv_tf32<<<(M + 127) / 128, 128>>>(A, x, y, M, N);
}
