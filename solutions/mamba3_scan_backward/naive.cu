// Naive mamba3_scan_backward: one thread per state column (b, h, p). It runs
// the forward recurrence of its column, keeping every state h_t in scratch
// memory, then walks back in time with the column's adjoint W (spec.md, "The
// reverse sweep"), line by line. Gradients that sum over columns (dB, dC,
// dtheta, ddt, dlam) are added with atomicAdd into outputs zeroed first; dA and
// dskip are summed over t in a register and added once per column. Written to
// be read against the spec, not to be fast.

#include <cuda_runtime.h>

namespace {

constexpr int kMaxState = 128;  // the largest d_state the challenge allows

__global__ void column_backward(const float* x, const float* B, const float* C, const float* dt, const float* A,
                                const float* lam, const float* theta, const float* skip, const float* dy, float* dx,
                                float* dB, float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip,
                                float* states, int batch, int L, int H, int P, int N) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= batch * H * P) return;
    const int p = col % P, h = (col / P) % H, b = col / (P * H);
    const float A_h = A[h], skip_h = skip[h];
    float* hs = states + (size_t)col * L * N;  // h_t of this column: hs[t*N + n]
    auto row_of = [&](int t) { return (b * L + t) * H + h; };  // (b, t, h)

    // ---- forward: h_t = R(theta_t)(alpha_t h_{t-1} + beta_t S_{t-1}) + gamma_t S_t
    float state[kMaxState];
    for (int n = 0; n < N; ++n) state[n] = 0.f;
    for (int t = 0; t < L; ++t) {
        const int row = row_of(t);
        const float d = dt[row], l = lam[row];
        const float alpha = expf(d * A_h), beta = (1.f - l) * d * alpha, gamma = l * d;
        const float xv = x[row * P + p];
        const float xp = t > 0 ? x[(row - H) * P + p] : 0.f;  // S_{-1} = 0
        for (int i = 0; i < N / 2; ++i) {
            const float bp0 = t > 0 ? B[(row - H) * N + 2 * i] : 0.f;
            const float bp1 = t > 0 ? B[(row - H) * N + 2 * i + 1] : 0.f;
            const float v0 = alpha * state[2 * i] + beta * bp0 * xp;
            const float v1 = alpha * state[2 * i + 1] + beta * bp1 * xp;
            float s, c;
            sincosf(theta[row * (N / 2) + i], &s, &c);
            state[2 * i] = c * v0 - s * v1 + gamma * B[row * N + 2 * i] * xv;
            state[2 * i + 1] = s * v0 + c * v1 + gamma * B[row * N + 2 * i + 1] * xv;
        }
        for (int n = 0; n < N; ++n) hs[t * N + n] = state[n];
    }

    // ---- reverse: W holds W_{t+1} = dL/dv_{t+1} (W_L = 0)
    float W[kMaxState], G[kMaxState];
    for (int n = 0; n < N; ++n) W[n] = 0.f;
    float dA_sum = 0.f, dskip_sum = 0.f;
    for (int t = L - 1; t >= 0; --t) {
        const int row = row_of(t);
        const float d = dt[row], l = lam[row];
        const float alpha = expf(d * A_h), gamma = l * d;
        float alpha_next = 0.f, beta_next = 0.f;
        if (t + 1 < L) {
            const float dn = dt[row + H], ln = lam[row + H];
            alpha_next = expf(dn * A_h);
            beta_next = (1.f - ln) * dn * alpha_next;
        }
        const float xv = x[row * P + p], dyv = dy[row * P + p];
        const float xp = t > 0 ? x[(row - H) * P + p] : 0.f;
        const float* h_t = hs + t * N;
        const float* Bt = B + row * N;
        const float* Ct = C + row * N;

        float dx_acc = skip_h * dyv, dalpha = 0.f, dbeta = 0.f, dgamma = 0.f;
        for (int n = 0; n < N; ++n) {
            G[n] = Ct[n] * dyv + alpha_next * W[n];  // G_t = dL/dh_t
            atomicAdd(&dC[row * N + n], h_t[n] * dyv);
            const float dS = gamma * G[n] + beta_next * W[n];  // S_t enters h_t and v_{t+1}
            atomicAdd(&dB[row * N + n], dS * xv);
            dx_acc += Bt[n] * dS;
            dgamma += G[n] * Bt[n] * xv;
        }
        dx[row * P + p] = dx_acc;
        for (int i = 0; i < N / 2; ++i) {
            float s, c;
            sincosf(theta[row * (N / 2) + i], &s, &c);
            // u_t = h_t - gamma_t S_t = R_t v_t; d(R u)/dtheta turns pair i a quarter further
            const float u0 = h_t[2 * i] - gamma * Bt[2 * i] * xv;
            const float u1 = h_t[2 * i + 1] - gamma * Bt[2 * i + 1] * xv;
            atomicAdd(&dtheta[row * (N / 2) + i], G[2 * i + 1] * u0 - G[2 * i] * u1);
            // W_t = R_t^T G_t
            W[2 * i] = c * G[2 * i] + s * G[2 * i + 1];
            W[2 * i + 1] = -s * G[2 * i] + c * G[2 * i + 1];
        }
        if (t > 0) {  // h_{-1} = 0 and S_{-1} = 0: dalpha_0 = dbeta_0 = 0
            const float* h_prev = hs + (t - 1) * N;
            const float* Bp = B + (row - H) * N;
            for (int n = 0; n < N; ++n) {
                dalpha += W[n] * h_prev[n];
                dbeta += W[n] * Bp[n] * xp;
            }
        }
        atomicAdd(&ddt[row], A_h * alpha * dalpha + (1.f - l) * (1.f + d * A_h) * alpha * dbeta + l * dgamma);
        atomicAdd(&dlam[row], d * (dgamma - alpha * dbeta));
        dA_sum += d * alpha * (dalpha + (1.f - l) * d * dbeta);
        dskip_sum += xv * dyv;
    }
    atomicAdd(&dA[h], dA_sum);
    atomicAdd(&dskip[h], dskip_sum);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, const float* dy, float* dx, float* dB,
                      float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    const size_t steps = (size_t)batch * seq_len * n_heads;
    cudaMemset(dB, 0, steps * d_state * sizeof(float));
    cudaMemset(dC, 0, steps * d_state * sizeof(float));
    cudaMemset(dtheta, 0, steps * (d_state / 2) * sizeof(float));
    cudaMemset(ddt, 0, steps * sizeof(float));
    cudaMemset(dlam, 0, steps * sizeof(float));
    cudaMemset(dA, 0, n_heads * sizeof(float));
    cudaMemset(dskip, 0, n_heads * sizeof(float));
    float* states = nullptr;  // every h_t of every column: 2.1 GB at the official size
    if (cudaMalloc(&states, steps * head_dim * d_state * sizeof(float)) != cudaSuccess) return;
    const int columns = batch * n_heads * head_dim;
    const int threads = 128;
    column_backward<<<(columns + threads - 1) / threads, threads>>>(x, B, C, dt, A, lam, theta, skip, dy, dx, dB, dC,
                                                                    ddt, dA, dlam, dtheta, dskip, states, batch,
                                                                    seq_len, n_heads, head_dim, d_state);
    cudaFree(states);
}
