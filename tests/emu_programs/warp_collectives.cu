// Warp collectives: divergent shuffles with partial masks, width 16, ballot,
// all/any, activemask, syncwarp, xor-butterfly reduction and a partial warp.
#include <cuda_runtime.h>

#define FULL 0xffffffffu

__global__ void divergent(const int* in, int* out) {
    int t = threadIdx.x, lane = t % 32;
    int v = in[t];
    int r;
    if (lane < 16) {
        r = __shfl_down_sync(0x0000ffffu, v, 1, 16);   // lane 15 keeps its own value
    } else {
        r = __shfl_xor_sync(0xffff0000u, v, 3);       // stays within lanes 16..31
    }
    out[t] = r;
}

__global__ void width16(const int* in, int* out) {
    int t = threadIdx.x;
    int v = in[t];
    out[0 * 64 + t] = __shfl_sync(FULL, v, 3, 16);        // lane 3 of each 16-lane segment
    out[1 * 64 + t] = __shfl_up_sync(FULL, v, 2, 16);     // first two lanes of a segment keep v
    out[2 * 64 + t] = __shfl_down_sync(FULL, v, 5, 16);
    out[3 * 64 + t] = __shfl_xor_sync(FULL, v, 8, 16);
    out[4 * 64 + t] = __shfl_sync(FULL, v, 35);           // srcLane modulo 32 -> lane 3
}

__global__ void votes(const int* in, int* out) {
    int t = threadIdx.x, lane = t % 32;
    int v = in[t];
    out[0 * 64 + t] = (int)__ballot_sync(FULL, v % 3 == 0);
    out[1 * 64 + t] = __all_sync(FULL, v >= 0);
    out[2 * 64 + t] = __any_sync(FULL, v == 7);
    unsigned m = 0;
    if (lane % 2 == 0) {
        m = __activemask();
        __syncwarp(m);
    }
    out[3 * 64 + t] = (int)m;
    int s = v;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL, s, off);
    out[4 * 64 + t] = s;
    if (lane < 8) {
        // partial-mask reduction among the first 8 lanes
        int p = v;
        for (int off = 4; off > 0; off >>= 1) p += __shfl_down_sync(0xffu, p, off, 8);
        out[5 * 64 + t] = p;
    } else {
        out[5 * 64 + t] = -1;
    }
}

// 48 threads: the second warp has only 16 lanes; missing lanes count as exited.
__global__ void partial_warp(int* out) {
    int t = threadIdx.x;
    out[t] = (int)__ballot_sync(FULL, 1);
    out[48 + t] = __shfl_down_sync(FULL, t, 1);
}

extern "C" void solve(const int* in, int* out) {
    divergent<<<1, 64>>>(in, out);
    width16<<<1, 64>>>(in, out + 64);
    votes<<<1, 64>>>(in, out + 6 * 64);
    partial_warp<<<1, 48>>>(out + 12 * 64);
    cudaDeviceSynchronize();
}
