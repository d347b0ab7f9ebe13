// expect: pass
// Independent tensor-core design: one warp per 16 x 8 tile of C, each lane loads its own A and B fragment elements straight from global memory (PTX fragment layout, zero past the edges); no shared memory, no ldmatrix.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifndef SWAP_A_REGISTERS
#define SWAP_A_REGISTERS 0
#endif

__device__ __forceinline__ uint32_t pack(half lo, half hi) {
    return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

__global__ void tile_16x8(const half* A, const half* B, float* C, int M, int N, int K) {
    int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    int m0 = blockIdx.y * 16, n0 = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * 8;
    if (n0 >= N) return;  // whole warps leave together
    const half zero = __float2half(0.0f);
    auto a_at = [&](int r, int c) { return (r < M && c < K) ? A[(size_t)r * K + c] : zero; };
    auto b_at = [&](int r, int c) { return (r < K && c < N) ? B[(size_t)r * N + c] : zero; };
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[4], b[2];
        for (int i = 0; i < 4; i++) {  // a_i: rows g (+8 for odd i), k 2t,2t+1 (+8 for i >= 2)
            int r = m0 + g + 8 * (i & 1), c = k0 + 2 * t + 8 * (i >> 1);
            a[i] = pack(a_at(r, c), a_at(r, c + 1));
        }
        for (int i = 0; i < 2; i++) {  // b_i: k 2t,2t+1 (+8 for i = 1), column g
            int r = k0 + 2 * t + 8 * i, c = n0 + g;
            b[i] = pack(b_at(r, c), b_at(r + 1, c));
        }
        if (SWAP_A_REGISTERS) { uint32_t x = a[1]; a[1] = a[2]; a[2] = x; }
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    for (int i = 0; i < 4; i++) {  // d_i: row g (+8 for i >= 2), column 2t + (i & 1)
        int r = m0 + g + 8 * (i >> 1), c = n0 + 2 * t + (i & 1);
        if (r < M && c < N) C[(size_t)r * N + c] = d[i];
    }
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    const int warps = 4;
    dim3 grid((N + 8 * warps - 1) / (8 * warps), (M + 15) / 16);
    tile_16x8<<<grid, 32 * warps>>>(A, B, C, M, N, K);
}
