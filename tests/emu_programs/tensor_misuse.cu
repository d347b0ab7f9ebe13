// Tensor-core misuse emu reports (GPU behaviour: undefined or a fault).
//   0: ldmatrix given a generic pointer instead of a shared-state address
//   1: wmma::load_matrix_sync from a pointer that is not 256-bit aligned
//   2: cp.async.ca of 8 bytes to a 4-byte-aligned shared address
//   3: cp.async.bulk.prefetch.L2 of a global address that is not 16-byte aligned
//   4: a 16-byte ld.volatile.global.v2.u64 from an 8-byte-aligned address
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

__global__ void misuse(const half* g, float* out, int mode) {
    __shared__ __align__(16) half S[16 * 16];
    for (int i = threadIdx.x; i < 256; i += 32) S[i] = g[i];
    __syncwarp();
    if (mode == 0) {
        uint32_t r;
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "l"(&S[(threadIdx.x % 8) * 16]));
        out[threadIdx.x] = (float)r;
    } else if (mode == 1) {
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> a;
        nvcuda::wmma::load_matrix_sync(a, S + 4, 16);
        out[threadIdx.x] = __half2float(a.x[0]);
    } else if (mode == 3) {
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], 64;" ::"l"(g + 2) : "memory");
    } else if (mode == 4) {
        unsigned long long a, b;
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(g + 4) : "memory");
        out[threadIdx.x] = (float)(a + b);
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"((uint32_t)__cvta_generic_to_shared(&S[2])), "l"(g));
        asm volatile("cp.async.wait_all;" ::);
    }
}

extern "C" void solve(const half* g, float* out, int mode) {
    misuse<<<1, 32>>>(g, out, mode);
    cudaDeviceSynchronize();
}
