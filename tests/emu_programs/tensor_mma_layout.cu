// Fragment layout probes (one warp).
// variant 0..5, mma.sync: each lane builds its A, B and C registers from the
//   matrices in global memory with the PTX ISA's per-lane formulas (below),
//   runs one mma and writes its four D registers to D[lane * 4 + i]: right
//   only if the formulas match the hardware's layout.
//   0: f16 m16n8k8, 1: f16 m16n8k16, 2: bf16 m16n8k8, 3: bf16 m16n8k16,
//   4: tf32 m16n8k4, 5: tf32 m16n8k8. A is 16 x K, B is K x 8, C/D 16 x 8
//   (row-major floats; 16-bit operands are converted on the device).
// variant 10..15, ldmatrix .x1/.x2/.x4 then the same with .trans: shared
//   memory holds 32 rows of 8 b16 values (row * 8 + col); lane 8i + j gives
//   matrix i's row j as shared row 8i + (5j mod 8); every lane writes its
//   registers as b16 pairs to L[lane * 8 + 2 * reg + half].
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

// groupID = lane >> 2, threadID_in_group = lane % 4 (PTX ISA, mma fragments)
__device__ int a_row(int ty, int k, int lane, int i) {
    int g = lane >> 2;
    if (ty == 2) return k == 4 ? g + 8 * i : g + 8 * (i % 2);                      // tf32
    return k == 8 ? g + 8 * (i / 2) : ((i < 2 || (i >= 4 && i < 6)) ? g : g + 8);  // f16/bf16
}
__device__ int a_col(int ty, int k, int lane, int i) {
    int t = lane & 3;
    if (ty == 2) return k == 4 ? t : (i < 2 ? t : t + 4);
    return k == 8 ? t * 2 + (i & 1) : (i < 4 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8);
}
__device__ int b_row(int ty, int k, int lane, int i) {
    int t = lane & 3;
    if (ty == 2) return i == 0 ? t : t + 4;
    return k == 8 ? t * 2 + i : (i < 2 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8);
}
__device__ int c_row(int lane, int i) { return i < 2 ? (lane >> 2) : (lane >> 2) + 8; }
__device__ int c_col(int lane, int i) { return (lane & 3) * 2 + (i & 1); }

__device__ uint32_t bits16(int ty, float x) {
    return ty == 0 ? (uint32_t)__half_as_ushort(__float2half(x)) : (uint32_t)__bfloat16_as_ushort(__float2bfloat16(x));
}

// ty: 0 f16, 1 bf16, 2 tf32
__global__ void mma_probe(const float* A, const float* B, const float* C, float* D, int ty, int k) {
    int lane = threadIdx.x;
    int na = 16 * k / 32, nb = 8 * k / 32;  // elements per lane
    uint32_t a[4] = {}, b[2] = {};
    for (int i = 0; i < na; i++) {
        float v = A[a_row(ty, k, lane, i) * k + a_col(ty, k, lane, i)];
        if (ty == 2) a[i] = __float_as_uint(v);
        else a[i / 2] |= bits16(ty, v) << (16 * (i & 1));
    }
    for (int i = 0; i < nb; i++) {
        float v = B[b_row(ty, k, lane, i) * 8 + (lane >> 2)];
        if (ty == 2) b[i] = __float_as_uint(v);
        else b[i / 2] |= bits16(ty, v) << (16 * (i & 1));
    }
    float c[4], d[4];
    for (int i = 0; i < 4; i++) c[i] = C[c_row(lane, i) * 8 + c_col(lane, i)];
    if (ty == 0 && k == 8)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else if (ty == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else if (ty == 1 && k == 8)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else if (ty == 1)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else if (k == 4)
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[lane * 4 + i] = d[i];
}

__global__ void ldmatrix_probe(uint16_t* L, int count, int trans) {
    __shared__ __align__(16) uint16_t S[32 * 8];
    int lane = threadIdx.x;
    for (int i = lane; i < 32 * 8; i += 32) S[i] = (uint16_t)i;
    __syncwarp();
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(&S[(8 * (lane / 8) + (5 * (lane % 8)) % 8) * 8]);
    uint32_t r[4] = {0xdeadbeefu, 0xdeadbeefu, 0xdeadbeefu, 0xdeadbeefu};
    if (count == 1 && !trans) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    if (count == 2 && !trans) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
    if (count == 4 && !trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    if (count == 1 && trans) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    if (count == 2 && trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
    if (count == 4 && trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    for (int i = 0; i < 4; i++) {
        L[lane * 8 + 2 * i] = (uint16_t)(r[i] & 0xffffu);
        L[lane * 8 + 2 * i + 1] = (uint16_t)(r[i] >> 16);
    }
}

extern "C" void solve(const float* A, const float* B, const float* C, float* D, uint16_t* L, int variant) {
    static const int types[6] = {0, 0, 1, 1, 2, 2}, ks[6] = {8, 16, 8, 16, 4, 8};
    if (variant >= 0 && variant < 6) mma_probe<<<1, 32>>>(A, B, C, D, types[variant], ks[variant]);
    if (variant >= 10 && variant < 16) ldmatrix_probe<<<1, 32>>>(L, 1 << ((variant - 10) % 3), variant >= 13);
    cudaDeviceSynchronize();
}
