// expect: unwritten_output
// Adds into the output without zeroing it first: counters start from the marker the harness fills outputs with before every call, and bins no key falls into are never written at all.
#include <cuda_runtime.h>

__global__ void count(const int* in, int* h, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[in[i]], 1);
}

extern "C" void solve(const int* input, int* histogram, int N, int num_bins) {
    count<<<(N + 255) / 256, 256>>>(input, histogram, N);
}
