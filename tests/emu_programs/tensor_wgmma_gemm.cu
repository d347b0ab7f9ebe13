// Example: a float32 C = A B with Hopper's warpgroup MMA (sm_90a), the shape a
// wgmma GEMM takes. A (M x K) and B (K x N) are f16, row-major; M % 64 == 0,
// N % 128 == 0, K % 64 == 0. One warpgroup (128 threads) per 64 x 128 tile of C;
// per 64-wide slice of K it copies (cp.async) A's 64 x 64 tile K-major and
// B's 64 x 128 tile N-major into shared memory with the 128-byte swizzle, then
// issues four m64n128k16 MMAs on matrix descriptors. Single-buffered for
// clarity: a fast kernel keeps several stages in flight and waits on older
// wgmma groups only (wgmma.wait_group N > 0).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int BM = 64, BN = 128, BK = 64;
constexpr int kABytes = BM * BK * 2, kBBytes = BK * BN * 2;  // 8 KiB, 16 KiB
constexpr int kSmem = kABytes + kBBytes + 1024;              // + room to align to 1024

// 128-byte swizzle: the 16-byte chunk index (address bits 4-6) XOR the row
// within the 8-row, 1024-byte pattern (bits 7-9).
__device__ uint32_t swizzle128(uint32_t offset) { return offset ^ (((offset >> 7) & 7) << 4); }

// Matrix descriptor: start, leading- and stride-dimension byte offsets (all >> 4)
// and the swizzle mode in bits 62-63 (1: 128-byte).
__device__ uint64_t descriptor(uint32_t start, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((start & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 | 1ull << 62;
}

__device__ void cp_async16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src));
}

__device__ __forceinline__ void wgmma_m64n128k16(float* acc, uint64_t desc_a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7]),
                   "+f"(acc[8]), "+f"(acc[9]), "+f"(acc[10]), "+f"(acc[11]), "+f"(acc[12]), "+f"(acc[13]), "+f"(acc[14]), "+f"(acc[15]),
                   "+f"(acc[16]), "+f"(acc[17]), "+f"(acc[18]), "+f"(acc[19]), "+f"(acc[20]), "+f"(acc[21]), "+f"(acc[22]), "+f"(acc[23]),
                   "+f"(acc[24]), "+f"(acc[25]), "+f"(acc[26]), "+f"(acc[27]), "+f"(acc[28]), "+f"(acc[29]), "+f"(acc[30]), "+f"(acc[31]),
                   "+f"(acc[32]), "+f"(acc[33]), "+f"(acc[34]), "+f"(acc[35]), "+f"(acc[36]), "+f"(acc[37]), "+f"(acc[38]), "+f"(acc[39]),
                   "+f"(acc[40]), "+f"(acc[41]), "+f"(acc[42]), "+f"(acc[43]), "+f"(acc[44]), "+f"(acc[45]), "+f"(acc[46]), "+f"(acc[47]),
                   "+f"(acc[48]), "+f"(acc[49]), "+f"(acc[50]), "+f"(acc[51]), "+f"(acc[52]), "+f"(acc[53]), "+f"(acc[54]), "+f"(acc[55]),
                   "+f"(acc[56]), "+f"(acc[57]), "+f"(acc[58]), "+f"(acc[59]), "+f"(acc[60]), "+f"(acc[61]), "+f"(acc[62]), "+f"(acc[63])
                 : "l"(desc_a), "l"(desc_b), "r"(1));
}

__global__ void __launch_bounds__(128) wgmma_gemm(const __half* A, const __half* B, float* C, int M, int N, int K) {
    extern __shared__ unsigned char smem_raw[];
    uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw), base = (raw + 1023u) & ~1023u;
    uint32_t a_tile = base, b_tile = base + kABytes;
    int tid = threadIdx.x, row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        // A: row r of the tile is 128 bytes (64 halves of K) at r * 128.
        for (int c = tid; c < BM * BK / 8; c += 128) {
            int r = c / 8, chunk = c % 8;
            cp_async16(a_tile + swizzle128(r * 128 + chunk * 16), A + (size_t)(row0 + r) * K + k0 + chunk * 8);
        }
        // B: two 64-column atoms (8 KiB apart); k-row r of an atom is 128 bytes at r * 128.
        for (int c = tid; c < BK * BN / 8; c += 128) {
            int r = c / (BN / 8), chunk = c % (BN / 8), atom = chunk / 8;
            cp_async16(b_tile + swizzle128(atom * 8192 + r * 128 + (chunk % 8) * 16),
                       B + (size_t)(k0 + r) * N + col0 + chunk * 8);
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < BK / 16; s++) {
            // A K-major: step s starts 32 bytes further into each row; 8-row groups 1024 bytes apart.
            // B N-major: step s starts 16 k-rows further; 8-row groups 1024 apart, atoms 8192 apart.
            wgmma_m64n128k16(acc, descriptor(a_tile + 32 * s, 16, 1024), descriptor(b_tile + 2048 * s, 8192, 1024));
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();  // the tiles are overwritten next
    }
    // D fragment: warp w holds rows 16w..16w+15; lane l rows l/4 and l/4 + 8,
    // columns 8j + 2(l%4) and + 1 of each 8-column block j.
    int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
        int r = row0 + 16 * warp + lane / 4 + 8 * ((i >> 1) & 1), c = col0 + 8 * (i >> 2) + 2 * (lane % 4) + (i & 1);
        C[(size_t)r * N + c] = acc[i];
    }
}

extern "C" void solve(const __half* A, const __half* B, float* C, int M, int N, int K) {
    cudaFuncSetAttribute(wgmma_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    wgmma_gemm<<<dim3(N / BN, M / BM), 128, kSmem>>>(A, B, C, M, N, K);
    cudaDeviceSynchronize();
}
