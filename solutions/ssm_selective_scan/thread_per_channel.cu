// ssm_selective_scan: one thread per channel (b, d), whole sequence in order.
//
// The first step up from the naive one-thread-per-batch walk: every (b, d)
// channel is independent, so give each its own thread with its d_state states
// in registers (d_state padded to 4/8/16/32/64 at compile time, padded states
// have A = B = C = 0 and stay 0) and scan t = 0..L-1 once. Lanes run along d,
// so u, delta and y are read and written in coalesced rows, and B[t], C[t] are
// the same address for the whole warp (a broadcast). Its limit is parallelism:
// the official size has only 2048 channels, ~16 threads per SM, so each SM
// runs a long dependent loop with almost no latency hiding.
// Accuracy: the hardware ex2 (behind exp2f/__expf) is slightly biased for
// arguments near 0, and a decay applied 8192 times in one sequential product
// turns that into ~1e-4 relative drift (over tolerance at seq_len 8192,
// d_state 64, long memory). This version therefore takes 2^x from a short
// polynomial on the FMA pipe that is exact at x = 0.

#include <cuda_runtime.h>

namespace {

constexpr float kLog2e = 1.4426950408889634f;

// 2^x for x <= 0: x = j + r with |r| <= 1/2, 2^r = 1 + r*q(r) (q: degree-4
// near-minimax fit, max relative error 1.7e-7, no bias at r = 0), j into the exponent.
__device__ __forceinline__ float ex2_poly(float x) {
    x = fmaxf(x, -125.f);
    const float magic = 12582912.f;  // 1.5 * 2^23: x + magic rounds x to an integer
    const float t = x + magic;
    const float r = x - (t - magic);
    float q = fmaf(0.001326472731307149f, r, 0.009671512991189957f);
    q = fmaf(q, r, 0.05550733581185341f);
    q = fmaf(q, r, 0.24022242426872253f);
    q = fmaf(q, r, 0.6931470036506653f);
    const float p = fmaf(q, r, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

template <int NS>
__global__ void __launch_bounds__(32)
channel_scan(const float* __restrict__ u, const float* __restrict__ delta,
             const float* __restrict__ A, const float* __restrict__ B,
             const float* __restrict__ C, const float* __restrict__ skip,
             float* __restrict__ y, int L, int D, int N) {
    const int d = blockIdx.x * blockDim.x + threadIdx.x;
    const int b = blockIdx.y;
    if (d >= D) return;
    float A2[NS], h[NS];
#pragma unroll
    for (int n = 0; n < NS; ++n) {
        A2[n] = n < N ? A[static_cast<size_t>(d) * N + n] * kLog2e : 0.f;  // exp(x) = 2^(x*log2 e)
        h[n] = 0.f;
    }
    const float sk = skip[d];
    for (int t = 0; t < L; ++t) {
        const size_t row = static_cast<size_t>(b) * L + t;
        const float dt = delta[row * D + d];
        const float ut = u[row * D + d];
        const float du = dt * ut;
        float acc = sk * ut;
#pragma unroll
        for (int n = 0; n < NS; ++n) {
            const float bn = n < N ? __ldg(B + row * N + n) : 0.f;
            const float cn = n < N ? __ldg(C + row * N + n) : 0.f;
            h[n] = fmaf(ex2_poly(dt * A2[n]), h[n], du * bn);
            acc = fmaf(cn, h[n], acc);
        }
        y[row * D + d] = acc;
    }
}

template <int NS>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    dim3 grid((D + 31) / 32, batch);
    channel_scan<NS><<<grid, 32>>>(u, delta, A, B, C, skip, y, L, D, N);
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B,
                      const float* C, const float* skip, float* y, int batch, int seq_len,
                      int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    if (d_state <= 4) launch<4>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 8) launch<8>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 16) launch<16>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 32) launch<32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else launch<64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
