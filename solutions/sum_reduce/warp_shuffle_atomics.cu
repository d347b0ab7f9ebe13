#include <cuda_runtime.h>

// Two changes from naive.cu. Each thread first sums many elements on its own
// (a grid-stride loop over float4s, enough blocks to fill the GPU once), so
// loads stay in flight and the per-element work is one add. Then a warp adds
// its 32 partial sums with register shuffles instead of shared memory and
// barriers, and lane 0 of every warp does one atomicAdd: thousands of atomics
// instead of N/256. The output is zeroed first; the float atomics make the
// last bits depend on the order warps finish in (well inside the tolerance).
constexpr int THREADS = 256;

__global__ void warp_sums(const float* input, float* output, int N) {
    const float4* in4 = reinterpret_cast<const float4*>(input);
    int n4 = N / 4;
    int stride = gridDim.x * blockDim.x;
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int i = tid; i < n4; i += stride) {
        float4 v = in4[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    if (tid < N - 4 * n4) acc += input[4 * n4 + tid];  // the N % 4 tail
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(output, acc);
}

extern "C" void solve(const float* input, float* output, int N) {
    int sms = 0, device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int blocks = sms * 8;  // 2048 threads per SM
    int needed = (N / 4 + THREADS) / THREADS;
    if (blocks > needed) blocks = needed;
    cudaMemset(output, 0, sizeof(float));
    warp_sums<<<blocks, THREADS>>>(input, output, N);
}
