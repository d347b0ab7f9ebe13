// expect: pass
// Independent correct design: 32 threads per row, Welford's update per thread, partial moments merged in shared memory by a tree (Chan's formula), two reads of the row.
#include <cuda_runtime.h>

#define THREADS 32

__global__ void ln_rows(const float* x, const float* gamma, const float* beta, float* y, int cols) {
    __shared__ float count[THREADS], mean[THREADS], m2[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float n = 0.0f, m = 0.0f, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        n += 1.0f;
        float d = row[c] - m;
        m += d / n;
        s += d * (row[c] - m);
    }
    count[threadIdx.x] = n;
    mean[threadIdx.x] = m;
    m2[threadIdx.x] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            int o = threadIdx.x + half;
            float na = count[threadIdx.x], nb = count[o], nt = na + nb;
            if (nt > 0.0f) {
                float d = mean[o] - mean[threadIdx.x];
                mean[threadIdx.x] += d * nb / nt;
                m2[threadIdx.x] += m2[o] + d * d * na * nb / nt;
                count[threadIdx.x] = nt;
            }
        }
        __syncthreads();
    }
    float mu = mean[0], inv = 1.0f / sqrtf(m2[0] / cols + 1e-5f);
    for (int c = threadIdx.x; c < cols; c += THREADS)
        y[(size_t)blockIdx.x * cols + c] = (row[c] - mu) * inv * gamma[c] + beta[c];
}

extern "C" void solve(const float* input, const float* gamma, const float* beta, float* output, int rows, int cols) {
    ln_rows<<<rows, THREADS>>>(input, gamma, beta, output, cols);
}
