// Each x element loaded once per thread instead of width times: a thread owns
// one channel and a tile of 64 consecutive time steps, keeps the last width
// inputs in registers and slides them along as it walks the tile (only the
// width-1 rows before the tile are loaded twice, by two threads). Consecutive
// threads still take consecutive channels, so every load and store is
// coalesced. What it lacks: 4-byte accesses (a warp moves 128 bytes per
// instruction, not 512) and one load in flight at a time per thread: x and y
// may alias as far as the compiler knows, so no load moves above the
// previous step's store.
#include <cuda_runtime.h>

#define TILE 64

__global__ void dwconv_sliding_window(const float* x, const float* weight, const float* bias, float* y, int batch,
                                      int seq_len, int channels, int width) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int t0 = blockIdx.y * TILE;
    int b = blockIdx.z;
    if (c >= channels) return;
    const float* xs = x + (long long)b * seq_len * channels + c;
    float* ys = y + (long long)b * seq_len * channels + c;
    float w[4] = {0.f, 0.f, 0.f, 0.f}, window[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < width; ++k) w[k] = weight[c * width + k];
    // window[k] holds x at step t - (width-1) + k; fill the first width-1.
    for (int k = 0; k < width - 1; ++k) {
        int t = t0 - (width - 1) + k;
        window[k + 1] = t >= 0 ? xs[(long long)t * channels] : 0.0f;
    }
    int end = min(seq_len, t0 + TILE);
    for (int t = t0; t < end; ++t) {
        for (int k = 0; k < width - 1; ++k) window[k] = window[k + 1];
        window[width - 1] = xs[(long long)t * channels];
        float sum = bias[c];
        for (int k = 0; k < width; ++k) sum += w[k] * window[k];
        ys[(long long)t * channels] = sum;
    }
}

extern "C" void solve(const float* x, const float* weight, const float* bias, float* y, int batch, int seq_len,
                      int channels, int width) {
    dim3 threads(128);
    dim3 blocks((channels + 127) / 128, (seq_len + TILE - 1) / TILE, batch);
    dwconv_sliding_window<<<blocks, threads>>>(x, weight, bias, y, batch, seq_len, channels, width);
}
