// expect: wrong_output
// x rounded to half precision (as a half-storage kernel would read it): 2^-11 relative error per input, about 20x the tolerance on normal data and 400x on large_offset.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                     int channels, int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * channels) return;
    int c = (int)(i % channels), t = (int)((i / channels) % seq_len);
    float s = bias[c];
    for (int k = 0; k < width; ++k) {
        int source = t - (width - 1) + k;
        if (source >= 0) s = fmaf(weight[c * width + k], __half2float(__float2half(x[i + (long long)(source - t) * channels])), s);
    }
    y[i] = s;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * channels;
    conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
