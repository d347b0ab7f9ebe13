// Inclusive prefix sum over many blocks: warp scans with __shfl_up_sync, block
// totals in cudaMalloc scratch, a one-block scan of the totals, then offsets.
#include <cuda_runtime.h>

template <int BLOCK>
__device__ int block_scan(int v, int* warp_sums) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int off = 1; off < 32; off <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += up;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int w = lane < BLOCK / 32 ? warp_sums[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            int up = __shfl_up_sync(0xffffffffu, w, off);
            if (lane >= off) w += up;
        }
        if (lane < BLOCK / 32) warp_sums[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    return v;
}

template <int BLOCK>
__global__ void scan_blocks(const int* in, int* out, int* totals, int n) {
    __shared__ int warp_sums[32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int v = i < n ? in[i] : 0;
    v = block_scan<BLOCK>(v, warp_sums);
    if (i < n) out[i] = v;
    if (threadIdx.x == BLOCK - 1) totals[blockIdx.x] = v;
}

template <int BLOCK>
__global__ void scan_totals(int* totals, int nblocks) {
    __shared__ int warp_sums[32];
    __shared__ int carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < nblocks; base += BLOCK) {
        int i = base + threadIdx.x;
        int v = i < nblocks ? totals[i] : 0;
        v = block_scan<BLOCK>(v, warp_sums);
        int c = carry;
        if (i < nblocks) totals[i] = v + c;
        __syncthreads();
        if (threadIdx.x == BLOCK - 1) carry = c + v;
        __syncthreads();
    }
}

__global__ void add_offsets(int* out, const int* totals, int n, int block) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i / block > 0) out[i] += totals[i / block - 1];
}

extern "C" void solve(const int* in, int* out, int n) {
    constexpr int B = 256;
    int nb = (n + B - 1) / B;
    int* totals;
    cudaMalloc((void**)&totals, nb * sizeof(int));
    scan_blocks<B><<<nb, B>>>(in, out, totals, n);
    scan_totals<B><<<1, B>>>(totals, nb);
    add_offsets<<<(n + 127) / 128, 128>>>(out, totals, n, B);
    cudaDeviceSynchronize();
    cudaFree(totals);
}
