// Contended atomics on int/unsigned/float/double/unsigned long long.
#include <cuda_runtime.h>

__device__ float atomic_max_float(float* addr, float v) {
    int* a = reinterpret_cast<int*>(addr);
    int old = *a, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS(a, assumed, __float_as_int(v));
    } while (old != assumed);
    return __int_as_float(old);
}

__global__ void contend(const int* x, int n, int* hist, int* ires, unsigned* ures, float* fres, double* dres,
                        unsigned long long* ullres) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    atomicAdd(&hist[v & 15], 1);
    atomicAdd(&ires[0], v);
    atomicSub(&ires[1], v);
    atomicMax(&ires[2], v);
    atomicMin(&ires[3], v);
    atomicAnd(&ires[4], ~(1 << (v & 31)));
    atomicOr(&ires[5], 1 << (v & 31));
    atomicXor(&ires[6], v);
    atomicExch(&ires[7], 42);
    atomicInc(&ures[0], 9u);           // wraps to 0 after reaching 9
    atomicAdd(&ures[1], (unsigned)v);
    atomicMax(&ures[2], (unsigned)v);
    atomicAdd(&fres[0], (float)(v & 7));  // small integers: exact in any order
    atomic_max_float(&fres[1], (float)v * 0.5f);
    atomicAdd(&dres[0], (double)v * 0.25);
    atomicAdd(&ullres[0], (unsigned long long)v << 20);
    int old = atomicCAS(&ires[8], 0, i + 1);  // exactly one winner sees 0
    if (old == 0) ires[9] = i + 1;
}

extern "C" void solve(const int* x, int n, int* hist, int* ires, unsigned* ures, float* fres, double* dres,
                      unsigned long long* ullres) {
    contend<<<(n + 255) / 256, 256>>>(x, n, hist, ires, ures, fres, dres, ullres);
    cudaDeviceSynchronize();
}
