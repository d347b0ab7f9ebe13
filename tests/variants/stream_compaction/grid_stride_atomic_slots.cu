// expect: wrong_output
// Takes output slots from an atomic counter (warp-aggregated: one atomicAdd per warp, lanes ranked by ballot) in a grid-stride loop: counts and the zeros are right, but slots go in the order warps arrive, not in the order of i.
#include <cuda_runtime.h>

__global__ void keep_positive(const float* in, float* out, int* count, int n) {
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        long long i = base + threadIdx.x;
        float x = i < n ? in[i] : -1.0f;
        unsigned ballot = __ballot_sync(0xffffffffu, x > 0.0f);
        int first = 0;
        if (lane == 0 && ballot) first = atomicAdd(count, __popc(ballot));
        first = __shfl_sync(0xffffffffu, first, 0);
        if (x > 0.0f) out[first + __popc(ballot & ((1u << lane) - 1u))] = x;
    }
}

__global__ void zero_rest(float* out, const int* count, int n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        if (i >= *count) out[i] = 0.0f;
}

extern "C" void solve(const float* input, float* output, int* count, int N) {
    cudaMemsetAsync(count, 0, sizeof(int));
    keep_positive<<<64, 256>>>(input, output, count, N);
    zero_rest<<<64, 256>>>(output, count, N);
}
