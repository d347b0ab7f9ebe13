// Programmatic dependent launch. produce() writes out[i] = 2 in[i] and lets its
// dependents launch early; consume(), launched by cudaLaunchKernelEx with the
// programmatic-stream-serialization attribute, reads its own input first, then
// waits for produce()'s writes (cudaGridDependencySynchronize) and writes
// result[i] = out[i] + in2[i]. The second pair does the same through inline
// PTX (griddepcontrol.launch_dependents / griddepcontrol.wait), on a kernel
// template, into result2.
#include <cuda_runtime.h>

__global__ void produce(const float* in, float* out, int n) {
    cudaTriggerProgrammaticLaunchCompletion();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

__global__ void consume(const float* out, const float* in2, float* result, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float own = i < n ? in2[i] : 0.0f;
    cudaGridDependencySynchronize();
    if (i < n) result[i] = out[i] + own;
}

__global__ void produce_ptx(const float* in, float* out, int n) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

template <int SCALE>
__global__ void consume_ptx(const float* out, const float* in2, float* result, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float own = i < n ? SCALE * in2[i] : 0.0f;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) result[i] = out[i] + own;
}

extern "C" void solve(const float* in, const float* in2, float* out, float* result, float* out2, float* result2, int n) {
    const int blocks = (n + 127) / 128;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(128);
    config.attrs = attribute;
    config.numAttrs = 1;

    produce<<<blocks, 128>>>(in, out, n);
    cudaLaunchKernelEx(&config, consume, (const float*)out, in2, result, n);
    produce_ptx<<<blocks, 128>>>(in, out2, n);
    cudaLaunchKernelEx(&config, consume_ptx<1>, (const float*)out2, in2, result2, n);
    cudaDeviceSynchronize();
}
