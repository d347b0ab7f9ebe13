// Uses inline PTX, which emu cannot execute.
#include <cuda_runtime.h>

__global__ void lane_ids(int* out) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = (int)lane;
}

extern "C" void solve(int* out) {
    lane_ids<<<1, 32>>>(out);
}
