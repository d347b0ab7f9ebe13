// A type error on line 6.
#include <cuda_runtime.h>

__global__ void k(float* x) {
    int i = threadIdx.x;
    x[i] = undeclared_value * 2.0f;
}

extern "C" void solve(float* x) { k<<<1, 32>>>(x); }
