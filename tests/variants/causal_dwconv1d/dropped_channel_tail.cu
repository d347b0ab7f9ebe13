// expect: unwritten_output
// Each thread handles a group of 4 channels (as a float4 version would): the last channels % 4 channels are never written.
#include <cuda_runtime.h>

__global__ void conv(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                     int channels, int width) {
    int groups = channels / 4;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)batch * seq_len * groups) return;
    int g = (int)(i % groups);
    long long row = i / groups;
    int t = (int)(row % seq_len);
    for (int c = 4 * g; c < 4 * g + 4; ++c) {
        float s = bias[c];
        for (int k = 0; k < width; ++k) {
            int source = t - (width - 1) + k;
            if (source >= 0) s += weight[c * width + k] * x[(row + source - t) * channels + c];
        }
        y[row * channels + c] = s;
    }
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long n = (long long)batch * seq_len * (channels / 4);
    if (n > 0) conv<<<(unsigned)((n + 255) / 256), 256>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
