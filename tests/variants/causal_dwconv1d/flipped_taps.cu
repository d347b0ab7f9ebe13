// expect: wrong_output
// weight[c, k] applied to x[t - k] (a textbook convolution's flipped kernel) instead of x[t - (width-1) + k] (PyTorch's cross-correlation): wrong for every width above 1.
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                     int channels, int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * channels) return;
    int c = (int)(i % channels), t = (int)((i / channels) % seq_len);
    float s = bias[c];
    for (int k = 0; k < width; ++k)
        if (t - k >= 0) s += weight[c * width + k] * x[i - (long long)k * channels];
    y[i] = s;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * channels;
    conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
