// expect: pass
// Independent correct design: a block stages a (64 + 3)-step by 32-channel tile of x in shared memory (zeros before t = 0), then each thread computes outputs from it with mul then add, bias last.
#include <cuda_runtime.h>

#define TT 64
#define TC 32

__global__ void conv_tile(const float* x, const float* weight, const float* bias, float* y, int seq_len,
                          int channels, int width) {
    __shared__ float tile[TT + 3][TC];
    int c = blockIdx.x * TC + threadIdx.x;
    int t0 = blockIdx.y * TT;
    long long base = (long long)blockIdx.z * seq_len * channels;
    for (int r = threadIdx.y; r < TT + 3; r += blockDim.y) {
        int t = t0 - 3 + r;
        tile[r][threadIdx.x] = (c < channels && t >= 0 && t < seq_len) ? x[base + (long long)t * channels + c] : 0.0f;
    }
    __syncthreads();
    if (c >= channels) return;
    for (int r = threadIdx.y; r < TT; r += blockDim.y) {
        int t = t0 + r;
        if (t >= seq_len) break;
        float s = 0.0f;
        for (int k = 0; k < width; ++k) s = s + weight[c * width + k] * tile[r + 3 - (width - 1) + k][threadIdx.x];
        y[base + (long long)t * channels + c] = s + bias[c];
    }
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    dim3 threads(TC, 8);
    dim3 blocks((channels + TC - 1) / TC, (seq_len + TT - 1) / TT, batch);
    conv_tile<<<blocks, threads>>>(x, weight, bias, y, seq_len, channels, width);
}
