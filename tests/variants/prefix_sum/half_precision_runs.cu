// expect: wrong_output
// Each thread sums its run of 16 elements in __half before the float32 block scan and carry: 11-bit running sums, infinite past 65504.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define T 256
#define ITEMS 16

__global__ void scan_tiles(const float* in, float* out, float* totals, int n) {
    __shared__ float thread_tot[T];
    long long base = ((long long)blockIdx.x * T + threadIdx.x) * ITEMS;
    __half run[ITEMS];
    __half acc = __float2half(0.0f);
    for (int j = 0; j < ITEMS; ++j) {
        acc = __hadd(acc, __float2half(base + j < n ? in[base + j] : 0.0f));
        run[j] = acc;
    }
    thread_tot[threadIdx.x] = __half2float(acc);
    __syncthreads();
    float before = 0.0f;
    for (int k = 0; k < threadIdx.x; ++k) before += thread_tot[k];
    for (int j = 0; j < ITEMS; ++j)
        if (base + j < n) out[base + j] = before + __half2float(run[j]);
    if (threadIdx.x == T - 1) totals[blockIdx.x] = before + __half2float(acc);
}

__global__ void carry(float* totals, int blocks) {
    float r = 0.0f;
    for (int b = 0; b < blocks; ++b) { float t = totals[b]; totals[b] = r; r += t; }
}

__global__ void add(float* out, const float* offsets, int n) {
    long long base = (long long)blockIdx.x * T * ITEMS;
    for (int j = threadIdx.x; j < T * ITEMS; j += T)
        if (base + j < n) out[base + j] += offsets[blockIdx.x];
}

extern "C" void solve(const float* input, float* output, int N) {
    static float* totals = nullptr;
    static int cap = 0;
    int blocks = (N + T * ITEMS - 1) / (T * ITEMS);
    if (blocks > cap) { cudaFree(totals); cudaMalloc(&totals, blocks * sizeof(float)); cap = blocks; }
    scan_tiles<<<blocks, T>>>(input, output, totals, N);
    carry<<<1, 1>>>(totals, blocks);
    add<<<blocks, T>>>(output, totals, N);
}
