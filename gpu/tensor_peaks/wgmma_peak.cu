// Peak throughput of Hopper's warpgroup MMA, wgmma.mma_async m64n256k16
// f32 += f16 x f16 with A and B read from shared memory through matrix
// descriptors (no swizzle, K-major core matrices), with no global-memory
// traffic in the timed loop. A measurement program only (sm_90a): the emulator
// cannot run wgmma. Each warpgroup keeps its 64 x 256 f32 accumulator in
// registers and chains wgmmas on it; several warpgroups per SM. Two data sets:
// all ones (every accumulator must be exactly 16 * wgmmas issued: proves each
// one ran and read K = 16) and random halves in [-1, 1] (the timing that
// counts). Prints TFLOP/s.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a wgmma_peak.cu
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

constexpr int WGMMAS_PER_GROUP = 4;  // wgmmas issued between commits (one K = 64 slice)

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

// Shared-memory matrix descriptor, no swizzle: start address, leading-dimension
// byte offset (between the two K-adjacent 8x8 core matrices) and stride byte
// offset (between M- or N-adjacent core matrices), each in 16-byte units.
__device__ __forceinline__ uint64_t descriptor(const void* smem, uint32_t lbo, uint32_t sbo) {
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"  // scale-d: 1 accumulates into d
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1));
}

// A: 64 x 16 halves (8 x 2 core matrices), B: 256 x 16 halves (32 x 2), both
// K-major: core matrix (row block r, k block c) at byte (r * 2 + c) * 128.
__global__ void __launch_bounds__(256, 1) wgmma_peak(float* out, int iters, bool ones) {
    __shared__ __align__(128) __half sA[64 * 16];
    __shared__ __align__(128) __half sB[256 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x)
        sA[i] = ones ? __float2half(1.0f) : __float2half((int)(hash32(blockIdx.x * 7919 + i) & 0xFFFF) / 32768.0f - 1.0f);
    for (int i = threadIdx.x; i < 256 * 16; i += blockDim.x)
        sB[i] = ones ? __float2half(1.0f) : __float2half((int)(hash32(blockIdx.x * 104729 + i + 99991) & 0xFFFF) / 32768.0f - 1.0f);
    // generic-proxy stores above, async-proxy (wgmma) reads below
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    const uint64_t da = descriptor(sA, 128, 256), db = descriptor(sB, 128, 256);
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++) d[i] = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int w = 0; w < WGMMAS_PER_GROUP; w++) wgmma_m64n256k16(d, da, db);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // one group stays in flight
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    float bad = 0.0f, sum = 0.0f;
    const float expected = 16.0f * WGMMAS_PER_GROUP * iters;
#pragma unroll
    for (int i = 0; i < 128; i++) {
        sum += d[i];
        if (d[i] != expected) bad = 1.0f;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = ones ? bad : sum;
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const int sms = prop.multiProcessorCount, threads = 256, iters = 20000;  // 2 warpgroups per block, one block per SM
    const int blocks = sms;
    float* out;
    CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
    float* host = (float*)malloc(sizeof(float) * blocks * threads);
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    for (int ones = 1; ones >= 0; ones--) {
        wgmma_peak<<<blocks, threads>>>(out, iters / 10, ones);  // warm-up
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(t0));
        wgmma_peak<<<blocks, threads>>>(out, iters, ones);
        CHECK(cudaEventRecord(t1));
        CHECK(cudaEventSynchronize(t1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, t0, t1));
        const double flops = 2.0 * 64 * 256 * 16 * (double)WGMMAS_PER_GROUP * iters * blocks * (threads / 128);
        const char* check = "";
        if (ones) {
            CHECK(cudaMemcpy(host, out, sizeof(float) * blocks * threads, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int i = 0; i < blocks * threads; i++) bad += host[i] != 0.0f;
            check = bad ? " RESULTS WRONG" : " results exact";
        }
        printf("wgmma m64n256k16 f16->f32 (smem A and B)  %d warpgroups/SM  %-6s  %8.3f ms  %6.1f TFLOP/s%s\n",
               threads / 128, ones ? "ones" : "random", ms, flops / ms / 1e9, check);
    }
    free(host);
    CHECK(cudaFree(out));
    return 0;
}
