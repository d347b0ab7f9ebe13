// C = A B (row-major, float32 C) with inline PTX: cp.async stages each K slice
// in shared memory, ldmatrix loads the f16/bf16 fragments, mma.sync multiplies.
// One warp per 16 x 16 tile of C (two m16n8 tiles). M and N are multiples of
// 16, K of 16 (f16/bf16) or 8 (tf32).
//   kind 0: f16 m16n8k16, 1: bf16 m16n8k16, 2: tf32 m16n8k8 (cvt.rna.tf32.f32)
//   bug 0: none; 1: A registers passed to mma in a swapped order (a layout
//   bug); 2: the shared tiles are read without cp.async.wait_group.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(smem)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(smem)));
}

template <int KIND>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (KIND == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1),
              "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]));
}

__device__ __forceinline__ void wait_all_copies(int bug) {
    if (bug != 2) asm volatile("cp.async.wait_group 0;\n" ::);
    __syncwarp();
}

// T: half or __nv_bfloat16 (16 bits).
template <int KIND, class T>
__global__ void mma_gemm_16bit(const T* A, const T* B, float* C, int M, int N, int K, int bug) {
    constexpr int LD = 24;  // 16 + 8 halves of padding: rows stay 16-byte aligned
    __shared__ __align__(16) T As[16 * LD];
    __shared__ __align__(16) T Bs[16 * LD];
    int lane = threadIdx.x, tm = blockIdx.y, tn = blockIdx.x;
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        int row = lane / 2, col = (lane % 2) * 8;
        cp_async16(&As[row * LD + col], &A[(size_t)(tm * 16 + row) * K + k0 + col]);
        cp_async16(&Bs[row * LD + col], &B[(size_t)(k0 + row) * N + tn * 16 + col]);
        asm volatile("cp.async.commit_group;\n" ::);
        wait_all_copies(bug);
        uint32_t a[4], b[4];
        ldmatrix_x4(a, &As[(lane % 16) * LD + (lane / 16) * 8]);
        ldmatrix_x4_trans(b, &Bs[(lane % 16) * LD + (lane / 16) * 8]);
        if (bug == 1) { uint32_t t = a[1]; a[1] = a[2]; a[2] = t; }
        mma16816<KIND>(acc[0], a, b[0], b[1]);
        mma16816<KIND>(acc[1], a, b[2], b[3]);
        __syncwarp();  // the tiles are overwritten next
    }
    int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 4; i++)
            C[(size_t)(tm * 16 + g + 8 * (i >> 1)) * N + tn * 16 + 8 * j + 2 * t + (i & 1)] = acc[j][i];
}

__device__ __forceinline__ uint32_t to_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__global__ void mma_gemm_tf32(const float* A, const float* B, float* C, int M, int N, int K, int bug) {
    constexpr int LDA = 12, LDB = 20;  // padded, 16-byte multiples
    __shared__ __align__(16) float As[16 * LDA];
    __shared__ __align__(16) float Bs[8 * LDB];
    int lane = threadIdx.x, tm = blockIdx.y, tn = blockIdx.x, g = lane >> 2, t = lane & 3;
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 8) {
        cp_async16(&As[(lane / 2) * LDA + (lane % 2) * 4], &A[(size_t)(tm * 16 + lane / 2) * K + k0 + (lane % 2) * 4]);
        cp_async16(&Bs[(lane / 4) * LDB + (lane % 4) * 4], &B[(size_t)(k0 + lane / 4) * N + tn * 16 + (lane % 4) * 4]);
        asm volatile("cp.async.commit_group;\n" ::);
        wait_all_copies(bug);
        uint32_t a[4] = {to_tf32(As[g * LDA + t]), to_tf32(As[(g + 8) * LDA + t]),
                         to_tf32(As[g * LDA + t + 4]), to_tf32(As[(g + 8) * LDA + t + 4])};
        if (bug == 1) { uint32_t x = a[1]; a[1] = a[2]; a[2] = x; }
        for (int j = 0; j < 2; j++) {
            uint32_t b0 = to_tf32(Bs[t * LDB + 8 * j + g]), b1 = to_tf32(Bs[(t + 4) * LDB + 8 * j + g]);
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
        }
        __syncwarp();
    }
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 4; i++)
            C[(size_t)(tm * 16 + g + 8 * (i >> 1)) * N + tn * 16 + 8 * j + 2 * t + (i & 1)] = acc[j][i];
}

extern "C" void solve(const void* A, const void* B, float* C, int M, int N, int K, int kind, int bug) {
    dim3 grid(N / 16, M / 16);
    if (kind == 0) mma_gemm_16bit<0><<<grid, 32>>>((const half*)A, (const half*)B, C, M, N, K, bug);
    else if (kind == 1) mma_gemm_16bit<1><<<grid, 32>>>((const __nv_bfloat16*)A, (const __nv_bfloat16*)B, C, M, N, K, bug);
    else if (kind == 2) mma_gemm_tf32<<<grid, 32>>>((const float*)A, (const float*)B, C, M, N, K, bug);
    cudaDeviceSynchronize();
}
