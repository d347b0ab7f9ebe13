// The obvious first attempt: one thread per row walks its row in order. Correct,
// but a warp's 32 loads land in 32 different rows (32 memory transactions where
// one would do), and a single long row runs on one thread.
#include <cuda_runtime.h>

__global__ void gemv_thread_per_row(const float* A, const float* x, float* y, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;
    const float* row = A + (size_t)i * N;
    float sum = 0.0f;
    for (int j = 0; j < N; ++j) sum += row[j] * x[j];
    y[i] = sum;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int threads = 128;
    gemv_thread_per_row<<<(M + threads - 1) / threads, threads>>>(A, x, y, M, N);
}
