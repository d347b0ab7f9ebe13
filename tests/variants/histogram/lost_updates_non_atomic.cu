// expect: wrong_output
// Non-atomic increments: lanes that share a key read the same old count and all write old + 1, so all but one of their updates are lost. (On a GPU a plain `histogram[k]++` loses updates this way; the __syncwarp between the read and the write makes the emulator, which does not interleave threads between synchronisation points, lose them too.)
#include <cuda_runtime.h>

__global__ void count(const int* in, int* h, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = i < n ? in[i] : -1;
    int old = k >= 0 ? h[k] : 0;
    __syncwarp();
    if (k >= 0) h[k] = old + 1;
}

extern "C" void solve(const int* input, int* histogram, int N, int num_bins) {
    cudaMemset(histogram, 0, num_bins * sizeof(int));
    count<<<(N + 255) / 256, 256>>>(input, histogram, N);
}
