// expect: wrong_output
// Rounds A and B to TF32 (10 mantissa bits, as tensor cores in TF32 mode do) before multiplying; accumulates in float32.
#include <cuda_runtime.h>

__device__ float to_tf32(float v) {
    unsigned b = __float_as_uint(v);
    b = (b + 0xFFFu + ((b >> 13) & 1u)) & 0xFFFFE000u;  // round to nearest even on 13 dropped bits
    return __uint_as_float(b);
}

__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(to_tf32(A[(size_t)m * K + k]), to_tf32(B[(size_t)k * N + n]), acc);
    C[(size_t)m * N + n] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    mm<<<dim3((N + 127) / 128, M), 128>>>(A, B, C, M, N, K);
}
