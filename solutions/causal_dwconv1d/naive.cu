// The obvious first attempt: one thread per output element, channels fastest
// (consecutive threads read consecutive channels: coalesced), each thread
// reading its width inputs straight from global memory. Every x element is
// loaded width times, mostly from cache; the loop over taps has a bounds test
// per tap and the index arithmetic is 64-bit.
#include <cuda_runtime.h>

__global__ void dwconv_thread_per_output(const float* x, const float* weight, const float* bias, float* y,
                                         int batch, int seq_len, int channels, int width) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)batch * seq_len * channels;
    if (i >= total) return;
    int c = (int)(i % channels);
    int t = (int)((i / channels) % seq_len);
    float sum = bias[c];
    for (int k = 0; k < width; ++k) {
        int source = t - (width - 1) + k;
        if (source >= 0) sum += weight[c * width + k] * x[i + (long long)(source - t) * channels];
    }
    y[i] = sum;
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    long long total = (long long)batch * seq_len * channels;
    int threads = 256;
    dwconv_thread_per_output<<<(unsigned)((total + threads - 1) / threads), threads>>>(x, weight, bias, y, batch,
                                                                                       seq_len, channels, width);
}
