// The obvious first attempt: one thread per row, three passes over the row
// (maximum, sum of exponentials, normalise). Correct, but every thread walks
// its own row, so a warp's 32 loads land in 32 different rows.
#include <cuda_runtime.h>

__global__ void softmax_thread_per_row(const float* input, float* output, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* x = input + (size_t)r * cols;
    float* y = output + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(x[c] - m);
    for (int c = 0; c < cols; ++c) y[c] = expf(x[c] - m) / s;
}

extern "C" void solve(const float* input, float* output, int rows, int cols) {
    int threads = 128;
    softmax_thread_per_row<<<(rows + threads - 1) / threads, threads>>>(input, output, rows, cols);
}
