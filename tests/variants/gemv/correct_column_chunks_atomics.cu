// expect: pass
// Independent correct design: y zeroed by a kernel, then a warp per (row, 512-column chunk) adds its shuffle-reduced partial into y with atomicAdd (partials in any order).
#include <cuda_runtime.h>

#define CHUNK 512

__global__ void zero(float* y, int M) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M) y[i] = 0.0f;
}

__global__ void chunk_dot(const float* A, const float* x, float* y, int M, int N, int chunks) {
    long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= (long long)M * chunks) return;
    int i = (int)(warp / chunks), c = (int)(warp % chunks);
    int end = min(N, (c + 1) * CHUNK);
    float t = 0.0f;
    for (int j = c * CHUNK + lane; j < end; j += 32) t = fmaf(A[(long long)i * N + j], x[j], t);
    for (int o = 16; o > 0; o /= 2) t += __shfl_down_sync(0xffffffffu, t, o);
    if (lane == 0) atomicAdd(y + i, t);
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    zero<<<(M + 255) / 256, 256>>>(y, M);
    int chunks = (N + CHUNK - 1) / CHUNK;
    long long threads = (long long)M * chunks * 32;
    chunk_dot<<<(unsigned)((threads + 255) / 256), 256>>>(A, x, y, M, N, chunks);
}
