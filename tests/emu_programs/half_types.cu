// __half and __nv_bfloat16 conversions and arithmetic; float2/int4 vectors.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void halves(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half h = __float2half(x[i]);
    __half two = __float2half(2.0f);
    __half r = __hadd(__hmul(h, two), __float2half(0.5f));
    out[4 * i + 0] = __half2float(h);
    out[4 * i + 1] = __half2float(r);
    __nv_bfloat16 b = __float2bfloat16(x[i]);
    out[4 * i + 2] = __bfloat162float(b);
    __half2 p = __floats2half2_rn(x[i], -x[i]);
    float2 q = __half22float2(__hadd2(p, p));
    int4 iv = make_int4(1, 2, 3, 4);
    out[4 * i + 3] = q.x + q.y + (float)(iv.x + iv.w);
}

extern "C" void solve(const float* x, float* out, int n) {
    halves<<<(n + 63) / 64, 64>>>(x, out, n);
    cudaDeviceSynchronize();
}
