// Correct results, and a forked child process that lives on for 200 ms after solve()
// returns. A process that outlives solve(): host_work_escape.
#include <unistd.h>
#include <cuda_runtime.h>
__global__ void scan(const float* u, const float* delta, const float* A, const float* B, const float* C,
                     const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= batch * d_model) return;
    int b = index / d_model, d = index % d_model;
    float h[64];
    for (int n = 0; n < d_state; ++n) h[n] = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d], acc = 0.0f;
        for (int n = 0; n < d_state; ++n) {
            h[n] = expf(dt * A[d * d_state + n]) * h[n] + dt * B[row * d_state + n] * x;
            acc += C[row * d_state + n] * h[n];
        }
        y[row * d_model + d] = acc + skip[d] * x;
    }
}
#define LAUNCH(stream) scan<<<(batch * d_model + 127) / 128, 128, 0, stream>>>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state)

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, float* y, int batch, int seq_len, int d_model, int d_state) {
    if (fork() == 0) { usleep(200000); _exit(0); }
    LAUNCH(0);
}
