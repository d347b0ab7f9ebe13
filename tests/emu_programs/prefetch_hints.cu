// Cache hints (inline PTX prefetches) ahead of a plain copy: each thread
// prefetches the element one block further on in every form emu accepts,
// then copies its own element. The hints must change nothing.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void copy_with_hints(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int ahead = i + blockDim.x;
    if (ahead < n) {
        const float* p = in + ahead;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
        asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
        asm volatile("prefetch.L2 [%0+4];" ::"l"(in));
        asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
        asm volatile("prefetch.global.L2::evict_normal [%0];" ::"l"(p));
        asm volatile("prefetchu.L1 [%0];" ::"l"(p));
    }
    if (threadIdx.x == 0 && blockIdx.x + 1 < gridDim.x) {
        // the next block's 16-byte-aligned run, whole 16-byte units
        const float* next = in + (blockIdx.x + 1) * blockDim.x;
        uint32_t bytes = (uint32_t)(min(n - (int)((blockIdx.x + 1) * blockDim.x), (int)blockDim.x) * 4) & ~15u;
        if (bytes) {
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(next), "r"(bytes) : "memory");
            uint64_t policy = 0;
            asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(next), "r"(bytes), "l"(policy) : "memory");
        }
    }
    if (i < n) out[i] = in[i];
}

extern "C" void solve(const float* in, float* out, int n) {
    copy_with_hints<<<(n + 127) / 128, 128>>>(in, out, n);
    cudaDeviceSynchronize();
}
