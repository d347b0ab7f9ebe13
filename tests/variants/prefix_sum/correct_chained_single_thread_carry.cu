// expect: pass
// Two passes with a sequential carry: kernel 1 scans 512-element blocks (warp shuffles) and writes block totals; one thread turns the totals into offsets in order; kernel 2 adds them. Not the reference's single pass, same float32 results within tolerance.
#include <cuda_runtime.h>

#define T 512

__global__ void local_scan(const float* in, float* out, float* totals, int n) {
    __shared__ float warp_tot[T / 32];
    int i = blockIdx.x * T + threadIdx.x, lane = threadIdx.x % 32, w = threadIdx.x / 32;
    float v = i < n ? in[i] : 0.0f;
    for (int d = 1; d < 32; d *= 2) {
        float y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += y;
    }
    if (lane == 31) warp_tot[w] = v;
    __syncthreads();
    float before = 0.0f;
    for (int k = 0; k < w; ++k) before += warp_tot[k];
    v += before;
    if (i < n) out[i] = v;
    if (threadIdx.x == T - 1) totals[blockIdx.x] = v;
}

__global__ void carry_offsets(float* totals, int blocks) {
    float run = 0.0f;
    for (int b = 0; b < blocks; ++b) {
        float t = totals[b];
        totals[b] = run;
        run += t;
    }
}

__global__ void add_offsets(float* out, const float* offsets, int n) {
    int i = blockIdx.x * T + threadIdx.x;
    if (i < n) out[i] += offsets[blockIdx.x];
}

extern "C" void solve(const float* input, float* output, int N) {
    static float* totals = nullptr;
    static int cap = 0;
    int blocks = (N + T - 1) / T;
    if (blocks > cap) {
        cudaFree(totals);
        cudaMalloc(&totals, blocks * sizeof(float));
        cap = blocks;
    }
    local_scan<<<blocks, T>>>(input, output, totals, N);
    carry_offsets<<<1, 1>>>(totals, blocks);
    add_offsets<<<blocks, T>>>(output, totals, N);
}
