// expect: wrong_output
// Forgets the bias (conv1d(..., bias=None)): off by bias[c] everywhere.
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, float* y, int batch, int seq_len, int channels,
                     int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * channels) return;
    int c = (int)(i % channels), t = (int)((i / channels) % seq_len);
    float s = 0.0f;
    for (int k = 0; k < width; ++k) {
        int source = t - (width - 1) + k;
        if (source >= 0) s += weight[c * width + k] * x[i + (long long)(source - t) * channels];
    }
    y[i] = s;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * channels;
    conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, y, batch, seq_len, channels, width);
}
