// Global loads and stores with memory-order qualifiers in inline PTX, as
// decoupled look-backs publish and poll status words. Thread i of n:
//   words[2i], words[2i+1] (u64) read as one 16-byte volatile load and written
//     back swapped by one 16-byte volatile store;
//   values[i] (f32) read relaxed and written release-ordered, times two;
//   quads[4i .. 4i+3] (u32) read acquire-ordered as a v4 and written back
//     reversed as a relaxed v4, then quads[4i] read with .cg and rewritten with .cs;
//   doubles[i] (f64, a "d" operand) read with .cv and written with .wt, plus one.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void accesses(unsigned long long* words, float* values, unsigned* quads, double* doubles, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a, b;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(words + 2 * i) : "memory");
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(words + 2 * i), "l"(b), "l"(a) : "memory");
    float v;
    asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(values + i) : "memory");
    asm volatile("st.release.gpu.global.f32 [%0], %1;" ::"l"(values + i), "f"(2.0f * v) : "memory");
    unsigned q0, q1, q2, q3, first;
    asm volatile("ld.acquire.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(q0), "=r"(q1), "=r"(q2), "=r"(q3) : "l"(quads + 4 * i) : "memory");
    asm volatile("st.relaxed.sys.global.v4.b32 [%0], {%1, %2, %3, %4};"
                 ::"l"(quads + 4 * i), "r"(q3), "r"(q2), "r"(q1), "r"(q0) : "memory");
    asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(first) : "l"(quads + 4 * i) : "memory");
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(quads + 4 * i), "r"(first) : "memory");
    double d;
    asm volatile("ld.global.cv.f64 %0, [%1];" : "=d"(d) : "l"(doubles + i) : "memory");
    asm volatile("st.global.wt.f64 [%0], %1;" ::"l"(doubles + i), "d"(d + 1.0) : "memory");
}

extern "C" void solve(unsigned long long* words, float* values, unsigned* quads, double* doubles, int n) {
    accesses<<<(n + 63) / 64, 64>>>(words, values, quads, doubles, n);
    cudaDeviceSynchronize();
}
