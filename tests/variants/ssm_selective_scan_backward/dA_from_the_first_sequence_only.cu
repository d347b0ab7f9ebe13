// expect: wrong_output
// dA is summed over t but not over the batch: only sequence 0's terms reach it
// (the functional tests with batch > 1 catch it; dskip is still right).

#include <cuda_runtime.h>
#include <math.h>

namespace {

constexpr int kMaxState = 64;  // the challenge's largest d_state

__global__ void forward_states(const float* u, const float* delta, const float* A, const float* B,
                               float* H, int batch, int L, int D, int N) {
    const int d = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (d >= D) return;
    float h[kMaxState];
    for (int n = 0; n < N; ++n) h[n] = 0.f;
    for (int t = 0; t < L; ++t) {
        const size_t row = static_cast<size_t>(b) * L + t;
        const float dt = delta[row * D + d], ut = u[row * D + d];
        for (int n = 0; n < N; ++n) {
            h[n] = expf(dt * A[d * N + n]) * h[n] + dt * B[row * N + n] * ut;
            H[(row * D + d) * N + n] = h[n];
        }
    }
}

__global__ void reverse_sweep(const float* u, const float* delta, const float* A, const float* B,
                              const float* C, const float* skip, const float* dy, const float* H, float* G,
                              float* du, float* ddelta, float* dA_part, float* dskip_part, int batch, int L,
                              int D, int N) {
    const int d = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (d >= D) return;
    float g[kMaxState], a_next[kMaxState], dA[kMaxState];
    for (int n = 0; n < N; ++n) g[n] = a_next[n] = dA[n] = 0.f;  // g[seq_len] = 0
    float ds = 0.f;
    for (int t = L - 1; t >= 0; --t) {
        const size_t row = static_cast<size_t>(b) * L + t;
        const float dt = delta[row * D + d], ut = u[row * D + d], dyt = dy[row * D + d];
        float gB = 0.f, qA = 0.f;
        for (int n = 0; n < N; ++n) {
            const float a = expf(dt * A[d * N + n]);
            const float h_prev = t > 0 ? H[((row - 1) * D + d) * N + n] : 0.f;
            g[n] = C[row * N + n] * dyt + a_next[n] * g[n];  // g[t] = C dy + A_bar[t+1] g[t+1]
            G[(row * D + d) * N + n] = g[n];
            const float q = g[n] * a * h_prev;
            gB += g[n] * B[row * N + n];
            qA += q * A[d * N + n];
            dA[n] += q * dt;
            a_next[n] = a;
        }
        du[row * D + d] = skip[d] * dyt + dt * gB;
        ddelta[row * D + d] = qA + ut * gB;
        ds += dyt * ut;
    }
    for (int n = 0; n < N; ++n) dA_part[(static_cast<size_t>(b) * D + d) * N + n] = dA[n];
    dskip_part[static_cast<size_t>(b) * D + d] = ds;
}

__global__ void channel_sums(const float* u, const float* delta, const float* dy, const float* H,
                             const float* G, float* dB, float* dC, int rows, int D, int N) {
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // (row, n)
    if (i >= static_cast<size_t>(rows) * N) return;
    const size_t row = i / N;
    const int n = static_cast<int>(i % N);
    float sb = 0.f, sc = 0.f;
    for (int d = 0; d < D; ++d) {
        const size_t e = (row * D + d) * N + n;
        sb += G[e] * delta[row * D + d] * u[row * D + d];
        sc += dy[row * D + d] * H[e];
    }
    dB[i] = sb;
    dC[i] = sc;
}

__global__ void batch_sums(const float* dA_part, const float* dskip_part, float* dA, float* dskip, int batch,
                           int D, int N) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // (d, n)
    if (i >= D * N) return;
    float s = 0.f;
    s += dA_part[i];  // the mistake: sequence 0 only
    dA[i] = s;
    if (i % N == 0) {
        const int d = i / N;
        float k = 0.f;
        for (int b = 0; b < batch; ++b) k += dskip_part[static_cast<size_t>(b) * D + d];
        dskip[d] = k;
    }
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, const float* dy, float* du, float* ddelta, float* dA, float* dB,
                      float* dC, float* dskip, int batch, int seq_len, int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0 || d_state > kMaxState) return;
    const size_t elems = static_cast<size_t>(batch) * seq_len * d_model * d_state;
    const size_t parts = static_cast<size_t>(batch) * d_model * (d_state + 1);
    float* scratch = nullptr;
    if (cudaMalloc(&scratch, (2 * elems + parts) * sizeof(float)) != cudaSuccess) return;
    float* H = scratch;
    float* G = H + elems;
    float* dA_part = G + elems;
    float* dskip_part = dA_part + static_cast<size_t>(batch) * d_model * d_state;

    const dim3 channels((d_model + 63) / 64, batch);
    forward_states<<<channels, 64>>>(u, delta, A, B, H, batch, seq_len, d_model, d_state);
    reverse_sweep<<<channels, 64>>>(u, delta, A, B, C, skip, dy, H, G, du, ddelta, dA_part, dskip_part, batch,
                                    seq_len, d_model, d_state);
    const int rows = batch * seq_len;
    channel_sums<<<static_cast<unsigned>((static_cast<size_t>(rows) * d_state + 255) / 256), 256>>>(
        u, delta, dy, H, G, dB, dC, rows, d_model, d_state);
    batch_sums<<<(d_model * d_state + 255) / 256, 256>>>(dA_part, dskip_part, dA, dskip, batch, d_model, d_state);
    cudaFree(scratch);  // waits for the kernels
}
