// The persisting-L2 exploit on vector_add, for gpu/l2_pinning/measure.py.
// Built with -DPIN=1, solve() asks for the largest persisting L2 carve-out and
// launches with an access policy window that marks A persisting: lines so
// marked survive the harness's flush (plain writes of twice the L2) unless the
// harness resets them. Built with -DPIN=0 it is the same kernel, launched
// plainly: the honest twin the gain is measured against.
#include <cuda_runtime.h>

__global__ void add(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (; i < N; i += stride) C[i] = A[i] + B[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
    const int threads = 256;
    int blocks = (N + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16;
    cudaLaunchConfig_t config = {};
    config.gridDim = blocks;
    config.blockDim = threads;
    cudaLaunchAttribute attribute[1];
    config.attrs = attribute;
    config.numAttrs = 0;
#if PIN
    int device = 0, carve_out = 0, max_window = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&carve_out, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device);
    size_t limit = 0;
    cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize);
    if (limit < (size_t)carve_out)  // re-armed only when someone reset it: setting it costs tens of us
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)carve_out);
    size_t window = (size_t)N * sizeof(float);
    if (window > (size_t)max_window) window = (size_t)max_window;
    attribute[0].id = cudaLaunchAttributeAccessPolicyWindow;
    attribute[0].val.accessPolicyWindow.base_ptr = (void*)A;
    attribute[0].val.accessPolicyWindow.num_bytes = window;
    attribute[0].val.accessPolicyWindow.hitRatio = window > (size_t)carve_out ? (float)carve_out / (float)window : 1.0f;
    attribute[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attribute[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    config.numAttrs = 1;
#endif
    cudaLaunchKernelEx(&config, add, A, B, C, N);
}
