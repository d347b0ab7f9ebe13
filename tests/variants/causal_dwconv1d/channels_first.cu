// expect: wrong_output
// Assumes PyTorch's default conv1d layout (batch, channels, seq_len) for x and y: the same memory read and written with the wrong strides, in bounds.
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                     int channels, int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * channels) return;
    int t = (int)(i % seq_len), c = (int)((i / seq_len) % channels);
    float s = bias[c];
    for (int k = 0; k < width; ++k) {
        int source = t - (width - 1) + k;
        if (source >= 0) s += weight[c * width + k] * x[i + source - t];
    }
    y[i] = s;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * channels;
    conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
