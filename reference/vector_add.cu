#include <cuda_runtime.h>
#include <stdint.h>

// vector_add reference: C = A + B, memory-bound (12 bytes per element).
//
// What the floor needs is enough bytes in flight per SM to cover DRAM latency:
// by Little's law ~4 TB/s * ~1 us / 132 SMs ~ 30 KB per SM. Each thread here
// issues its 4 + 4 float4 loads before using any of them (128 bytes in flight
// per thread, 256 KB per SM at full occupancy), so the loads of a warp overlap
// instead of waiting one after another. Each block covers a contiguous span of
// 4 * 256 float4s, every warp access is 512 contiguous bytes (fully coalesced).
// The grid is one-shot (no grid-stride loop): at the official size it is
// 8192 blocks, ~62 waves of resident blocks, so the tail wave costs < 2%.
// Loads and stores carry the streaming hint (.cs): nothing is re-read, so the
// lines need not stay in L2.
//
// Tails: N % 4 elements go to a scalar epilogue in the last block; pointers
// that are not 16-byte aligned (never the case for cudaMalloc'd arrays, but
// solve() does not get to assume it) take a scalar grid-stride kernel.

constexpr int THREADS = 256;
constexpr int UNROLL = 4;  // float4s per thread

__global__ void __launch_bounds__(THREADS) add_float4(const float4* __restrict__ A, const float4* __restrict__ B,
                                                      float4* __restrict__ C, int n4, const float* __restrict__ a,
                                                      const float* __restrict__ b, float* __restrict__ c, int N) {
    int base = blockIdx.x * (THREADS * UNROLL) + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
    if (base + (UNROLL - 1) * THREADS < n4) {  // every block but possibly the last
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) x[k] = __ldcs(A + base + k * THREADS);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) y[k] = __ldcs(B + base + k * THREADS);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k)
            __stcs(C + base + k * THREADS, make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w));
    } else {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            int i = base + k * THREADS;
            if (i < n4) {
                float4 p = A[i], q = B[i];
                C[i] = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
            }
        }
    }
    if (blockIdx.x == gridDim.x - 1) {  // the 0-3 elements past the last float4
        int i = 4 * n4 + threadIdx.x;
        if (i < N) c[i] = a[i] + b[i];
    }
}

__global__ void add_scalar(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) C[i] = A[i] + B[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
    if (N <= 0) return;
    bool aligned = (((uintptr_t)A | (uintptr_t)B | (uintptr_t)C) & 15) == 0;
    if (!aligned) {
        int blocks = (N + THREADS - 1) / THREADS;
        add_scalar<<<blocks < 4096 ? blocks : 4096, THREADS>>>(A, B, C, N);
        return;
    }
    int n4 = N / 4;
    int per_block = THREADS * UNROLL;
    int blocks = n4 > 0 ? (n4 + per_block - 1) / per_block : 1;
    add_float4<<<blocks, THREADS>>>(reinterpret_cast<const float4*>(A), reinterpret_cast<const float4*>(B),
                                    reinterpret_cast<float4*>(C), n4, A, B, C, N);
}
