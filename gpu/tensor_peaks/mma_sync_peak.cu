// Peak throughput of mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 on the
// GPU it runs on, with no memory traffic: every warp runs CHAINS independent
// accumulator chains on operands held in registers. Two data sets: all ones
// (each result must be exactly 16 * iterations: proves every mma ran) and
// random halves in [-1, 1] (the timing that counts; tensor-core power, and so
// the clock, depends on the data). Prints TFLOP/s per configuration.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a mma_sync_peak.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        cudaError_t e = (x);                                                               \
        if (e != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}
// two halves packed in a register: 1.0 each, or uniform in [-1, 1)
__device__ __forceinline__ uint32_t operand(bool ones, uint32_t seed) {
    if (ones) return 0x3C003C00u;
    uint32_t h = hash32(seed);
    __half lo = __float2half((int)(h & 0xFFFF) / 32768.0f - 1.0f);
    __half hi = __float2half((int)(h >> 16) / 32768.0f - 1.0f);
    return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

template <int CHAINS>
__global__ void mma_peak(float* out, int iters, bool ones) {
    const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t a[4], b[2];
    for (int r = 0; r < 4; r++) a[r] = operand(ones, tid * 8 + r);
    for (int r = 0; r < 2; r++) b[r] = operand(ones, tid * 8 + 4 + r);
    float acc[CHAINS][4];
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
#pragma unroll
        for (int r = 0; r < 4; r++) acc[c][r] = 0.0f;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int c = 0; c < CHAINS; c++)
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                "{%0, %1, %2, %3};\n"
                : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    // ones: every element must be 16 * iters; otherwise keep the results live
    float bad = 0.0f, sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            sum += acc[c][r];
            if (acc[c][r] != 16.0f * iters) bad = 1.0f;
        }
    out[tid] = ones ? bad : sum;
}

template <int CHAINS>
void measure(int sms, int blocks_per_sm, int warps, int iters) {
    const int blocks = sms * blocks_per_sm, threads = warps * 32;
    float* out;
    CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    for (int ones = 1; ones >= 0; ones--) {
        mma_peak<CHAINS><<<blocks, threads>>>(out, iters / 10, ones);  // warm-up
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(t0));
        mma_peak<CHAINS><<<blocks, threads>>>(out, iters, ones);
        CHECK(cudaEventRecord(t1));
        CHECK(cudaEventSynchronize(t1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, t0, t1));
        const double flops = 2.0 * 16 * 8 * 16 * (double)CHAINS * iters * blocks * warps;
        const char* check = "";
        if (ones) {
            float* host = (float*)malloc(sizeof(float) * blocks * threads);
            CHECK(cudaMemcpy(host, out, sizeof(float) * blocks * threads, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int i = 0; i < blocks * threads; i++) bad += host[i] != 0.0f;
            check = bad ? " RESULTS WRONG" : " results exact";
            free(host);
        }
        printf("mma.sync m16n8k16 f16->f32  chains %d  warps/SM %2d (%d blocks x %d warps)  %-6s  %8.3f ms  %6.1f TFLOP/s%s\n",
               CHAINS, blocks_per_sm * warps, blocks_per_sm, warps, ones ? "ones" : "random", ms, flops / ms / 1e9,
               check);
    }
    CHECK(cudaFree(out));
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    printf("%s, %d SMs, max clock %d MHz\n", prop.name, prop.multiProcessorCount, clock_khz / 1000);
    const int sms = prop.multiProcessorCount, iters = 100000;
    measure<4>(sms, 1, 8, iters);
    measure<8>(sms, 1, 4, iters);
    measure<8>(sms, 1, 8, iters);
    measure<8>(sms, 2, 8, iters);
    measure<16>(sms, 1, 8, iters);
    measure<16>(sms, 2, 8, iters);
    return 0;
}
