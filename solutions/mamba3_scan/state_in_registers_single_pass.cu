// mamba3_scan, step by step (the reference until the chunked look-back kernel replaced it): single pass over time, the N x P state of each head
// held in registers across a block, per-step coefficients staged in shared memory.
//
// Algorithm. Columns p of the state are independent recurrences that share
// every coefficient of a step (alpha, beta, gamma, the angles, B, C), so a
// block owns COLS = 16 consecutive columns of one (b, h) and splits each
// column's N/2 row pairs over NG thread groups of RP pairs (thread = group g,
// column col). The official size (2, 4096, 16, 64, 64) gives 2*16*4 = 128
// blocks of 16 x 16 threads, one per SM. Time is walked in tiles of TT steps:
//   * staging: the raw inputs of tile k+1 (theta, B_t, B_{t-1}, C, dt, lam and
//     the x tile) are loaded into registers before tile k is scanned, so their
//     latency hides behind the scan; after it, each (t, pair) item is turned
//     into 8 coefficients in shared memory:
//       ac = alpha*cos, as = alpha*sin        (alpha folded into the rotation)
//       u  = R(theta_t)(beta * B_{t-1})       (the previous write, rotated once per pair)
//       g  = gamma * B_t,   C_t
//     so that per state element and step the scan does one FMUL and three
//     FFMAs:  h0 <- ac*h0 - as*h1 + u0*x_{t-1} + g0*x_t  (and its twin for h1),
//     plus one FFMA for C.h. x_{t-1} is the thread's own column, kept in a register.
//   * scan: every warp reads the same (t, pair) coefficients (two groups per
//     warp: two addresses), so the 16-byte shared loads are broadcasts. Each
//     thread writes its partial C.h of (t, col); group 0 adds skip*x.
//   * reduce: after the tile's one barrier, the NG partials of each (t, col)
//     are summed and y is written in 64-byte rows.
// Buffers: coefficients and x tiles are double-buffered (written for tile k+1
// while tile k is read); partials are double-buffered too, so one barrier per
// tile orders everything: coef/x[(k+1)&1] were last read by scan(k-1), before
// barrier k-1; partials[k&1] were last read by reduce(k-2), before barrier k-1.
//
// Every size is served: pairs past N/2 get zero writes and zero C (their state
// stays 0 and adds nothing), columns past P get x = 0 and are not stored,
// steps past seq_len in the last tile are scanned with zero inputs and not stored.
// The precision is that of the plain float32 recurrence: expf and sincosf
// (correct argument reduction for large angles) once per (t, h) and (t, pair).

#include <cuda_runtime.h>

namespace {

constexpr int COLS = 16;  // state columns per block
constexpr int TT = 32;    // time steps per tile

template <int NG, int RP>
struct Cfg {
    static constexpr int THREADS = COLS * NG;
    static constexpr int NPP = NG * RP;                        // row pairs, padded
    static constexpr int COEF = TT * NPP * 8;                  // floats per coefficient buffer
    static constexpr int XS = TT * COLS;                       // floats per x tile
    static constexpr int YG = TT * COLS + 16;                  // group stride of the partials: the two
                                                               // groups of a warp land in different banks
    static constexpr int YP = NG * YG;                         // floats per partials buffer
    static constexpr int SMEM_FLOATS = 2 * COEF + 2 * XS + 2 * YP;
    static constexpr int C_ITEMS = TT * NPP / THREADS;         // (t, pair) items staged per thread
    static constexpr int X_ITEMS = TT * COLS / THREADS;        // (t, col) items per thread (x and y)
    static_assert(TT * NPP % THREADS == 0 && TT * COLS % THREADS == 0, "items must divide evenly");
};

template <int NG, int RP>
__global__ void __launch_bounds__(Cfg<NG, RP>::THREADS)
scan_kernel(const float* __restrict__ x, const float* __restrict__ B, const float* __restrict__ C,
            const float* __restrict__ dt, const float* __restrict__ A, const float* __restrict__ lam,
            const float* __restrict__ theta, const float* __restrict__ skip, float* __restrict__ y,
            int L, int H, int P, int N, int ptiles) {
    using K = Cfg<NG, RP>;
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    float* coef_base = smem;                 // [2][TT][NPP][8]
    float* xs_base = smem + 2 * K::COEF;     // [2][TT][COLS]
    float* yp_base = xs_base + 2 * K::XS;    // [2][NG][YG]

    const int tid = threadIdx.x;
    const int pt = blockIdx.x % ptiles;
    const int bh = blockIdx.x / ptiles;  // b*H + h
    const int h = bh % H, b = bh / H;
    const int p0 = pt * COLS;
    const int npairs = N / 2;
    const float A_h = A[h], skip_h = skip[h];
    // row of (b, t, h) in the (batch, seq_len, n_heads) flattening; fits in int (<= 2^23)
    auto row_of = [&](int t) { return (b * L + t) * H + h; };

    // ---- staging registers: raw inputs of the next tile
    float r_th[K::C_ITEMS], r_b0[K::C_ITEMS], r_b1[K::C_ITEMS], r_q0[K::C_ITEMS], r_q1[K::C_ITEMS];
    float r_c0[K::C_ITEMS], r_c1[K::C_ITEMS], r_dt[K::C_ITEMS], r_lam[K::C_ITEMS];
    float r_x[K::X_ITEMS];

    auto load_tile = [&](int t0) {
#pragma unroll
        for (int i = 0; i < K::C_ITEMS; ++i) {
            const int f = tid + K::THREADS * i;
            const int t = t0 + f / K::NPP, j = f % K::NPP;
            float th = 0.f, b0 = 0.f, b1 = 0.f, q0 = 0.f, q1 = 0.f, c0 = 0.f, c1 = 0.f, d = 0.f, l = 0.f;
            if (t < L && j < npairs) {
                const int row = row_of(t);
                th = theta[row * npairs + j];
                b0 = B[row * N + 2 * j];
                b1 = B[row * N + 2 * j + 1];
                c0 = C[row * N + 2 * j];
                c1 = C[row * N + 2 * j + 1];
                if (t > 0) {  // B_{t-1}; S_{-1} = 0
                    q0 = B[(row - H) * N + 2 * j];
                    q1 = B[(row - H) * N + 2 * j + 1];
                }
                d = dt[row];
                l = lam[row];
            }
            r_th[i] = th; r_b0[i] = b0; r_b1[i] = b1; r_q0[i] = q0; r_q1[i] = q1;
            r_c0[i] = c0; r_c1[i] = c1; r_dt[i] = d; r_lam[i] = l;
        }
#pragma unroll
        for (int i = 0; i < K::X_ITEMS; ++i) {
            const int f = tid + K::THREADS * i;
            const int t = t0 + f / COLS, p = p0 + f % COLS;
            r_x[i] = (t < L && p < P) ? x[row_of(t) * P + p] : 0.f;
        }
    };

    // Turn the staged raw inputs into coefficients. Items past seq_len or N/2
    // hold zeros: no writes (u = g = 0, C = 0) and alpha = 1, cos = 1, sin = 0.
    auto store_tile = [&](float* coef, float* xs) {
#pragma unroll
        for (int i = 0; i < K::C_ITEMS; ++i) {
            const int f = tid + K::THREADS * i;
            const float d = r_dt[i], l = r_lam[i];
            const float alpha = expf(d * A_h);
            const float beta = (1.f - l) * d * alpha;
            const float gamma = l * d;
            float s, c;
            sincosf(r_th[i], &s, &c);
            const float q0 = beta * r_q0[i], q1 = beta * r_q1[i];
            float4* dst = reinterpret_cast<float4*>(coef + 8 * f);  // f = t*NPP + j
            dst[0] = make_float4(alpha * c, alpha * s, c * q0 - s * q1, s * q0 + c * q1);
            dst[1] = make_float4(gamma * r_b0[i], gamma * r_b1[i], r_c0[i], r_c1[i]);
        }
#pragma unroll
        for (int i = 0; i < K::X_ITEMS; ++i) xs[tid + K::THREADS * i] = r_x[i];
    };

    // ---- scan role: group g owns pairs g*RP .. g*RP+RP-1 of column col
    const int col = tid % COLS, g = tid / COLS;
    float h0[RP], h1[RP];
#pragma unroll
    for (int r = 0; r < RP; ++r) h0[r] = h1[r] = 0.f;
    float x_prev = 0.f;

    const int ntiles = (L + TT - 1) / TT;
    load_tile(0);
    store_tile(coef_base, xs_base);
    __syncthreads();

    for (int k = 0; k < ntiles; ++k) {
        const int t0 = k * TT;
        if (k + 1 < ntiles) load_tile(t0 + TT);

        const float* coef = coef_base + (k & 1) * K::COEF + 8 * g * RP;
        const float* xs = xs_base + (k & 1) * K::XS + col;
        float* yp = yp_base + (k & 1) * K::YP + g * K::YG + col;
#pragma unroll 4
        for (int t = 0; t < TT; ++t) {
            const float xv = xs[t * COLS];
            float acc = g == 0 ? skip_h * xv : 0.f;
#pragma unroll
            for (int r = 0; r < RP; ++r) {
                const float4 rot = *reinterpret_cast<const float4*>(coef + (t * K::NPP + r) * 8);
                const float4 wc = *reinterpret_cast<const float4*>(coef + (t * K::NPP + r) * 8 + 4);
                // rotate(alpha*h + beta*S_prev) + gamma*S with alpha and beta*B_prev pre-folded
                const float n0 = fmaf(-rot.y, h1[r], fmaf(rot.x, h0[r], fmaf(wc.x, xv, rot.z * x_prev)));
                const float n1 = fmaf(rot.x, h1[r], fmaf(rot.y, h0[r], fmaf(wc.y, xv, rot.w * x_prev)));
                h0[r] = n0;
                h1[r] = n1;
                acc = fmaf(wc.z, n0, fmaf(wc.w, n1, acc));
            }
            yp[t * COLS] = acc;
            x_prev = xv;
        }

        if (k + 1 < ntiles) store_tile(coef_base + ((k + 1) & 1) * K::COEF, xs_base + ((k + 1) & 1) * K::XS);
        __syncthreads();

        const float* ypr = yp_base + (k & 1) * K::YP;
#pragma unroll
        for (int i = 0; i < K::X_ITEMS; ++i) {
            const int f = tid + K::THREADS * i;  // f = t*COLS + c
            const int t = t0 + f / COLS, p = p0 + f % COLS;
            float sum = 0.f;
#pragma unroll
            for (int gg = 0; gg < NG; ++gg) sum += ypr[gg * K::YG + f];
            if (t < L && p < P) y[row_of(t) * P + p] = sum;
        }
    }
}

template <int NG, int RP>
void launch(const float* x, const float* B, const float* C, const float* dt, const float* A, const float* lam,
            const float* theta, const float* skip, float* y, int batch, int L, int H, int P, int N) {
    using K = Cfg<NG, RP>;
    const size_t smem = sizeof(float) * K::SMEM_FLOATS;
    static bool attr_set = false;  // one attribute call per instantiation
    if (!attr_set) {
        cudaFuncSetAttribute(scan_kernel<NG, RP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
        attr_set = true;
    }
    const int ptiles = (P + COLS - 1) / COLS;
    scan_kernel<NG, RP><<<batch * H * ptiles, K::THREADS, smem>>>(x, B, C, dt, A, lam, theta, skip, y, L, H,
                                                                  P, N, ptiles);
}

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, float* y, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    const int pairs = d_state / 2;
    // Group count grows with the state up to 16 (256 threads); past 32 pairs
    // each thread takes 4 pairs instead of 2 (198 KB of shared memory at 64 pairs).
    if (pairs <= 2)
        launch<1, 2>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (pairs <= 4)
        launch<2, 2>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (pairs <= 8)
        launch<4, 2>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (pairs <= 16)
        launch<8, 2>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else if (pairs <= 32)
        launch<16, 2>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
    else
        launch<16, 4>(x, B, C, dt, A, lam, theta, skip, y, batch, seq_len, n_heads, head_dim, d_state);
}
