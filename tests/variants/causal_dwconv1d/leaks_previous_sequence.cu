// expect: wrong_output
// Treats the batch as one long sequence: the first width-1 steps of each sequence read the end of the previous one instead of zeros (only the very first sequence is padded).
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                     int channels, int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * channels) return;
    int c = (int)(i % channels);
    long long row = i / channels;  // b * seq_len + t, the step in the flattened batch
    float s = bias[c];
    for (int k = 0; k < width; ++k) {
        long long source = row - (width - 1) + k;
        if (source >= 0) s += weight[c * width + k] * x[source * channels + c];
    }
    y[i] = s;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * channels;
    conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
