// expect: wrong_output
// Reads the keys as int4 and forgets the last N % 4 of them: those keys are never counted (N = 1, 2, 3 count nothing).
#include <cuda_runtime.h>

__global__ void count4(const int4* in, int* h, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        int4 k = in[i];
        atomicAdd(&h[k.x], 1);
        atomicAdd(&h[k.y], 1);
        atomicAdd(&h[k.z], 1);
        atomicAdd(&h[k.w], 1);
    }
}

extern "C" void solve(const int* input, int* histogram, int N, int num_bins) {
    cudaMemset(histogram, 0, num_bins * sizeof(int));
    int n4 = N / 4;
    count4<<<n4 / 256 + 1, 256>>>((const int4*)input, histogram, n4);
}
