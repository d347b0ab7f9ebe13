// mamba3_scan_backward, step by step with segment-parallel carries (the
// reference until the chunked look-back kernel replaced it): padded_reduction.cu's
// reverse sweep, its checkpoints and adjoint carries made parallel over time
// (H200, one run: the reference before it 4.23 ms, padded_reduction 3.59 ms,
// this 2.92 ms).
//
// padded_reduction.cu produces the checkpoints (h every K steps) and the adjoint at
// every segment boundary with one thread per (b, h, pair, 4 columns) walking
// all seq_len steps: 32,768 threads, about 8 warps per SM, each step waiting on
// global loads. Here every SEG-step segment is swept on its own, from a zero
// state (forward) and a zero adjoint (backward), all segments at once
// (1 M threads at the official size), and a short second kernel carries the
// true state and adjoint across the segment boundaries:
//   h_t = hloc_t + m_t h_{a-1}     W_a = Wloc_a + mr W_e
// for a segment [a, e), where per row pair m_t = prod_{r=a..t} alpha_r e^{i theta_r}
// and mr = prod_{t=a..e-1} alpha_{t+1} e^{-i theta_t} are complex scalars (the
// rotation turns a row pair like a complex number, rows 2i and 2i+1 its real
// and imaginary parts). The sweeps store the local checkpoints hloc and, per
// checkpoint and pair, m; the backward kernel adds m h_{a-1} when it loads a
// checkpoint (h_{a-1} kept in shared memory for the whole segment).
//
// padded_reduction.cu's description follows (its step 2 is replaced as above).
//
//
// Notation of spec.md: per (b, h) and state column p, h_t is the forward state,
// W_t = dL/dv_t the adjoint, W_t = R_t^T (C_t dy_t + alpha_{t+1} W_{t+1}).
// Threads own one row pair j and CPT = 4 consecutive columns of one (b, h).
//
// Four launches:
//  1. coefficients: cos/sin of every angle and (alpha, beta, gamma) of every
//     step, once (the later kernels read them instead of calling sincosf/expf).
//  2. carries: two independent sequential sweeps in one grid. Forward threads
//     run the recurrence and store h every K = 8 steps (the checkpoints);
//     reverse threads run the adjoint recurrence alone and store W at every
//     segment boundary (every SEG = 128 steps). No shared memory, no barriers:
//     each thread prefetches its inputs four steps ahead.
//  3. backward: one block per (b, h, segment, column block), all row pairs of
//     the head. It walks its segment backwards in chunks of K steps and each
//     chunk in two halves of K/2 steps: for a half it recomputes that half's
//     states from the chunk's checkpoint into registers, then runs the reverse
//     step (spec.md, "The folded form") over them. Per step and element that is
//     8 FP32 instructions of reverse step and, on average, 6 of recompute (the
//     first half of a chunk is recomputed twice: all K states in registers
//     spilled at the 128-register limit of 512 threads). After each half the
//     per-thread partial sums (Q, dC, CR, D over the thread's columns; X over
//     its rows) go through shared memory, are reduced over columns and rows,
//     and the gradients of those steps are written. Scalars per step (dalpha,
//     dbeta, dgamma) are kept for the whole segment and turned into ddt, dlam
//     and the block's dA share at its end: dbeta_t needs B_{t-1} Q_{t-1}, which
//     the sweep reaches only after step t (for the segment's first step it is
//     formed from W_ts x_{ts-1}).
//  4. per-head sums of the blocks' dA and dskip shares (deterministic order).
//
// The next chunk's checkpoint and inputs are loaded into registers before the
// current chunk's second half runs its reverse steps, and stored to shared
// memory after them; one block of 512 threads per SM.
// Every size is served: a head with more than 512 / (N/2) column groups is
// split into column blocks that add their shares of the column sums with
// atomics into zeroed outputs; padded columns carry zeros.

#include <cuda_runtime.h>

namespace {

constexpr int K = 8;        // steps per checkpoint and chunk
constexpr int HALF = K / 2; // steps whose states are in registers at once; partial sums handed over after each
constexpr int SEG = 128;    // steps per segment: the time span of one backward block
constexpr int CPT = 4;      // state columns per thread
constexpr int NV = 6;       // partial sums per (step, pair): Q0, Q1, dC0, dC1, CR, D
constexpr int MAX_THREADS = 512;
constexpr int PREFETCH = 4; // steps the carry sweeps load ahead

struct Sizes {
    int batch, L, H, P, N;
    int npairs;  // N / 2
    int Pp;      // P rounded up to CPT: row length of the checkpoint and carry arrays
    int nch;     // chunks (checkpoint slots) per (b, h)
    int nseg;    // segments per (b, h)
};

__device__ __forceinline__ int row_of(const Sizes& s, int b, int t, int h) { return (b * s.L + t) * s.H + h; }

// Columns p0 .. p0+3 of one (b, t, h) row of a (.., P) array; zeros past P.
__device__ __forceinline__ float4 load_cols(const float* row, int p0, int P) {
    if ((P & 3) == 0) return p0 < P ? *reinterpret_cast<const float4*>(row + p0) : make_float4(0.f, 0.f, 0.f, 0.f);
    float v[CPT];
#pragma unroll
    for (int c = 0; c < CPT; ++c) v[c] = p0 + c < P ? row[p0 + c] : 0.f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ float get(const float4& v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// ---------------------------------------------------------------------------
// 1. per-step coefficients

__global__ void coefficients_kernel(const float* __restrict__ dt, const float* __restrict__ A,
                                    const float* __restrict__ lam, const float* __restrict__ theta,
                                    float2* __restrict__ cs, float4* __restrict__ abg, int rows, int H, int npairs) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows * npairs; i += stride) {
        float s, c;
        sincosf(theta[i], &s, &c);
        cs[i] = make_float2(c, s);
    }
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
        const float d = dt[r], l = lam[r];
        const float alpha = expf(d * A[r % H]);
        abg[r] = make_float4(alpha, (1.f - l) * d * alpha, l * d, 0.f);
    }
}

// ---------------------------------------------------------------------------
// 2. checkpoints (forward) and adjoint carries (reverse)

struct ForwardIn {
    float2 cs, b;
    float4 abg, x;
};
struct ReverseIn {
    float2 cs, c;
    float alpha;
    float4 dy;
};

// Segment-local sweeps: thread = (role, b, h, segment, pair j, column group).
// Forward: h from zero over the segment; stores the local checkpoints inside the
// segment, the local end state and, per pair, m (the homogeneous factor).
// Reverse: W from zero at the segment end down to its start; stores Wloc_a and mr.
__global__ void __launch_bounds__(128) segment_sweeps_kernel(
    const float* __restrict__ x, const float* __restrict__ B, const float* __restrict__ C,
    const float* __restrict__ dy, const float2* __restrict__ cs, const float4* __restrict__ abg,
    float* __restrict__ ckpt, float2* __restrict__ mck, float* __restrict__ hseg, float2* __restrict__ mseg,
    float* __restrict__ wseg, float2* __restrict__ mrseg, Sizes s) {
    const int CGt = s.Pp / CPT;
    const int per_role = s.batch * s.H * s.nseg * s.npairs * CGt;
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    const bool reverse = gid >= per_role;
    if (reverse) gid -= per_role;
    if (gid >= per_role) return;
    const int cg = gid % CGt, j = (gid / CGt) % s.npairs, seg = (gid / (CGt * s.npairs)) % s.nseg;
    const int bh = gid / (CGt * s.npairs * s.nseg);
    const int b = bh / s.H, h = bh % s.H, p0 = cg * CPT;
    const int L = s.L, N = s.N;
    const int a = seg * SEG, e = min(a + SEG, L);
    auto store_rows = [&](float* base, const float* r0, const float* r1) {  // rows 2j, 2j+1 of an N x Pp matrix
        *reinterpret_cast<float4*>(base + (2 * j) * s.Pp + p0) = make_float4(r0[0], r0[1], r0[2], r0[3]);
        *reinterpret_cast<float4*>(base + (2 * j + 1) * s.Pp + p0) = make_float4(r1[0], r1[1], r1[2], r1[3]);
    };
    const size_t seg_slot = ((size_t)bh * s.nseg + seg);

    if (!reverse) {
        // h_t = R_t(alpha_t h_{t-1} + beta_t B_{t-1} x_{t-1}^T) + gamma_t B_t x_t^T on rows 2j, 2j+1, h_{a-1} = 0
        auto load = [&](int t) {
            ForwardIn in{};
            if (t < e) {
                const int row = row_of(s, b, t, h);
                in.cs = cs[row * s.npairs + j];
                in.abg = abg[row];
                in.b = *reinterpret_cast<const float2*>(B + row * N + 2 * j);
                in.x = load_cols(x + row * s.P, p0, s.P);
            }
            return in;
        };
        ForwardIn ring[PREFETCH];
#pragma unroll
        for (int d = 0; d < PREFETCH; ++d) ring[d] = load(a + d);
        float h0[CPT] = {}, h1[CPT] = {}, xp[CPT] = {};
        float2 bp = make_float2(0.f, 0.f);  // S_{-1} = 0
        if (a > 0) {  // the write beta_a B_{a-1} x_{a-1}^T belongs to the segment's first step
            const int row = row_of(s, b, a - 1, h);
            bp = *reinterpret_cast<const float2*>(B + row * N + 2 * j);
            const float4 xv = load_cols(x + row * s.P, p0, s.P);
            xp[0] = xv.x; xp[1] = xv.y; xp[2] = xv.z; xp[3] = xv.w;
        }
        float mr = 1.f, mi = 0.f;
        float* out = ckpt + (size_t)bh * s.nch * N * s.Pp;
        for (int t0 = a; t0 < e; t0 += PREFETCH) {
#pragma unroll
            for (int d = 0; d < PREFETCH; ++d) {
                const int t = t0 + d;
                if (t >= e) break;
                const ForwardIn in = ring[d];
                ring[d] = load(t + PREFETCH);
                const float c = in.cs.x, sn = in.cs.y;
                const float ac = in.abg.x * c, as = in.abg.x * sn;
                const float q0 = in.abg.y * bp.x, q1 = in.abg.y * bp.y;
                const float u0 = c * q0 - sn * q1, u1 = sn * q0 + c * q1;  // R_t beta_t B_{t-1}
                const float g0 = in.abg.z * in.b.x, g1 = in.abg.z * in.b.y;
#pragma unroll
                for (int k = 0; k < CPT; ++k) {
                    const float xv = get(in.x, k);
                    const float n0 = fmaf(ac, h0[k], fmaf(-as, h1[k], fmaf(u0, xp[k], g0 * xv)));
                    const float n1 = fmaf(as, h0[k], fmaf(ac, h1[k], fmaf(u1, xp[k], g1 * xv)));
                    h0[k] = n0;
                    h1[k] = n1;
                    xp[k] = xv;
                }
                const float nr = fmaf(ac, mr, -as * mi), ni = fmaf(as, mr, ac * mi);  // m_t = alpha_t e^{i theta_t} m_{t-1}
                mr = nr;
                mi = ni;
                bp = in.b;
                if ((t + 1) % K == 0 && t + 1 < e) {  // a checkpoint inside the segment: h_t local, and m_t
                    store_rows(out + (size_t)((t + 1) / K) * N * s.Pp, h0, h1);
                    if (cg == 0) mck[((size_t)bh * s.nch + (t + 1) / K) * s.npairs + j] = make_float2(mr, mi);
                }
            }
        }
        store_rows(hseg + seg_slot * N * s.Pp, h0, h1);
        if (cg == 0) mseg[seg_slot * s.npairs + j] = make_float2(mr, mi);
    } else {
        // W_t = alpha_{t+1} R_t^T W_{t+1} + (R_t^T C_t) dy_t, from W_e = 0 down to W_a
        auto load = [&](int t) {
            ReverseIn in{};
            if (t >= a) {
                const int row = row_of(s, b, t, h);
                in.cs = cs[row * s.npairs + j];
                in.c = *reinterpret_cast<const float2*>(C + row * N + 2 * j);
                in.alpha = abg[row].x;
                in.dy = load_cols(dy + row * s.P, p0, s.P);
            }
            return in;
        };
        ReverseIn ring[PREFETCH];
#pragma unroll
        for (int d = 0; d < PREFETCH; ++d) ring[d] = load(e - 1 - d);
        float w0[CPT] = {}, w1[CPT] = {};
        float alpha_next = e < L ? abg[row_of(s, b, e, h)].x : 0.f;  // alpha_e, the factor on W_e
        float mr = 1.f, mi = 0.f;
        for (int t0 = e - 1; t0 >= a; t0 -= PREFETCH) {
#pragma unroll
            for (int d = 0; d < PREFETCH; ++d) {
                const int t = t0 - d;
                if (t < a) break;
                const ReverseIn in = ring[d];
                ring[d] = load(t - PREFETCH);
                const float c = in.cs.x, sn = in.cs.y;
                const float rac = alpha_next * c, ras = alpha_next * sn;
                const float c0 = c * in.c.x + sn * in.c.y, c1 = -sn * in.c.x + c * in.c.y;  // R_t^T C_t
#pragma unroll
                for (int k = 0; k < CPT; ++k) {
                    const float g = get(in.dy, k);
                    const float n0 = fmaf(rac, w0[k], fmaf(ras, w1[k], c0 * g));
                    const float n1 = fmaf(-ras, w0[k], fmaf(rac, w1[k], c1 * g));
                    w0[k] = n0;
                    w1[k] = n1;
                }
                const float nr = fmaf(rac, mr, ras * mi), ni = fmaf(rac, mi, -ras * mr);  // mr *= alpha_{t+1} e^{-i theta_t}
                mr = nr;
                mi = ni;
                alpha_next = in.alpha;
            }
        }
        store_rows(wseg + seg_slot * N * s.Pp, w0, w1);
        if (cg == 0) mrseg[seg_slot * s.npairs + j] = make_float2(mr, mi);
    }
}

// Carries across segments: thread = (b, h, pair j, column p), nseg steps each way.
// In place: hseg[seg] becomes h_{a-1} (the true state before the segment),
// wseg[seg] becomes W_e (the true adjoint after it; zero after the last).
__global__ void __launch_bounds__(128) segment_carries_kernel(float* __restrict__ hseg, const float2* __restrict__ mseg,
                                                              float* __restrict__ wseg,
                                                              const float2* __restrict__ mrseg, Sizes s) {
    const int per_bh = s.npairs * s.Pp;
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= s.batch * s.H * per_bh) return;
    const int p = gid % s.Pp, j = (gid / s.Pp) % s.npairs, bh = gid / per_bh;
    const size_t mat = (size_t)s.N * s.Pp;
    float* hb = hseg + (size_t)bh * s.nseg * mat + (2 * j) * s.Pp + p;
    float* wb = wseg + (size_t)bh * s.nseg * mat + (2 * j) * s.Pp + p;
    const float2* mb = mseg + (size_t)bh * s.nseg * s.npairs + j;
    const float2* mrb = mrseg + (size_t)bh * s.nseg * s.npairs + j;
    float g0 = 0.f, g1 = 0.f;
    for (int sg = 0; sg < s.nseg; ++sg) {
        float* q = hb + sg * mat;
        const float l0 = q[0], l1 = q[s.Pp];
        const float2 m = mb[sg * s.npairs];
        q[0] = g0;
        q[s.Pp] = g1;
        const float n0 = fmaf(m.x, g0, fmaf(-m.y, g1, l0)), n1 = fmaf(m.y, g0, fmaf(m.x, g1, l1));
        g0 = n0;
        g1 = n1;
    }
    float w0 = 0.f, w1 = 0.f;
    for (int sg = s.nseg - 1; sg >= 0; --sg) {
        float* q = wb + sg * mat;
        const float l0 = q[0], l1 = q[s.Pp];
        const float2 m = mrb[sg * s.npairs];
        q[0] = w0;
        q[s.Pp] = w1;
        const float n0 = fmaf(m.x, w0, fmaf(-m.y, w1, l0)), n1 = fmaf(m.y, w0, fmaf(m.x, w1, l1));  // mr already holds e^{-i theta}
        w0 = n0;
        w1 = n1;
    }
}

// ---------------------------------------------------------------------------
// 3. the reverse sweep with recomputed states

// Shared-memory layout of the backward kernel (floats; every region a multiple of 4).
struct Layout {
    int CG, CB, VS, RS;  // column groups per block, columns per block, stride of one v and of one (step, pair) in rp
    int coef, xs, dys, stp, rp, xp, rs, xsum, hsc, seg, red, hst, total;
    __host__ __device__ Layout(int npairs, int CG_) {
        CG = CG_;
        CB = CG * CPT;
        VS = CG + 1;   // odd: the reducing threads (consecutive v, then pairs) read from different banks
        RS = NV * VS;
        int at = 0;
        auto take = [&](int n) { int here = at; at += (n + 3) & ~3; return here; };
        coef = take(2 * K * npairs * 16);  // [buf][step][pair] 4 float4s: fwd rotation/writes, rev rotation, C^T, B, C
        xs = take(2 * (K + 1) * CB);      // [buf][1 + step][col]: x_{t0-1} .. x_{t0+K-1}
        dys = take(2 * K * CB);           // [buf][step][col]
        stp = take(2 * K * 8);            // [buf][step]: alpha, beta, gamma, dt, lam, alpha_{t+1}, beta_{t+1}
        rp = take(HALF * npairs * RS);    // [step][pair][v][cg] partial sums over the thread's columns
        xp = take(HALF * npairs * CB);    // [step][pair][col] X partials over the thread's rows
        rs = take(HALF * npairs * 8);     // [step][pair][v]: column sums; then D and B.Q per pair
        xsum = take(HALF * CB);           // [step][col]: X summed over the rows
        hsc = take(HALF * 2);             // [step]: x.dy and B.C
        seg = take(4 * SEG);              // [D, B.Q, dgamma, x.dy][step of the segment]
        red = take(64);
        hst = take(2 * CPT * MAX_THREADS);  // [row r][column k][thread]: h_{a-1} of the thread's elements
        total = at;
    }
};

// What one thread stages for a chunk: at most one (step, pair) coefficient item and one
// float4 of the x / dy tile (the block has enough threads for that on the official size;
// other sizes stage in several rounds).
struct Staged {
    float2 cs, b, bp, c, next;
    float4 abg, v;
    float dtv, lamv;
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(MAX_THREADS, 1)
backward_kernel(const float* __restrict__ x, const float* __restrict__ B, const float* __restrict__ C,
                const float* __restrict__ dt, const float* __restrict__ A, const float* __restrict__ lam,
                const float* __restrict__ skip, const float* __restrict__ dy, const float2* __restrict__ cs,
                const float4* __restrict__ abg, const float* __restrict__ ckpt, const float2* __restrict__ mck,
                const float* __restrict__ hseg, const float* __restrict__ wcarry,
                float* __restrict__ dx, float* __restrict__ dB, float* __restrict__ dC, float* __restrict__ ddt,
                float* __restrict__ dlam, float* __restrict__ dtheta, float2* __restrict__ parts, Sizes s, int CG,
                int ncb, bool accumulate) {
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    const Layout lay(s.npairs, CG);
    const int CB = lay.CB, npairs = s.npairs, N = s.N, L = s.L;
    const int tid = threadIdx.x, NT = blockDim.x, lane = tid & 31, warp = tid >> 5, nwarps = NT >> 5;

    const int cb = blockIdx.x % ncb;
    const int seg = (blockIdx.x / ncb) % s.nseg;
    const int bh = blockIdx.x / (ncb * s.nseg);
    const int b = bh / s.H, h = bh % s.H;
    const int ts = seg * SEG, te = min(ts + SEG, L);
    const int CGt = s.Pp / CPT;
    const int cg0 = cb * CG;                      // first column group of the block
    const int CGv = min(CG, CGt - cg0);           // column groups in use
    const int pb = cg0 * CPT;                     // first column of the block
    const int CBv = min(CB, s.P - pb);            // columns in use
    const int cg = tid % CG, j = tid / CG;
    const bool active = j < npairs && cg < CGv;
    const int p0 = pb + cg * CPT;
    const float A_h = A[h], skip_h = skip[h];

    // ---- staging of a chunk's inputs
    const int coef_items = K * npairs, x_items = (2 * K + 1) * CG;
    const bool one_round = coef_items <= NT && x_items <= NT;
    auto stage_load = [&](int t0, int f) {
        Staged st{};
        if (f < coef_items) {
            const int T = t0 + f / npairs, jj = f % npairs;
            if (T < L) {
                const int row = row_of(s, b, T, h);
                st.cs = cs[row * npairs + jj];
                st.abg = abg[row];
                st.b = *reinterpret_cast<const float2*>(B + row * N + 2 * jj);
                st.c = *reinterpret_cast<const float2*>(C + row * N + 2 * jj);
                if (T > 0) st.bp = *reinterpret_cast<const float2*>(B + (row - s.H) * N + 2 * jj);
                if (T + 1 < L) {
                    const float4 n = abg[row + s.H];
                    st.next = make_float2(n.x, n.y);
                }
                if (jj == 0) {
                    st.dtv = dt[row];
                    st.lamv = lam[row];
                }
            }
        }
        if (f < x_items) {
            const int r = f / CG, g = f % CG;
            const bool is_x = r <= K;
            const int T = is_x ? t0 - 1 + r : t0 + r - (K + 1);
            if (T >= 0 && T < L)
                st.v = load_cols((is_x ? x : dy) + row_of(s, b, T, h) * s.P, pb + g * CPT, s.P);
        }
        return st;
    };
    auto stage_store = [&](const Staged& st, int buf, int f) {
        if (f < coef_items) {
            const int tl = f / npairs, jj = f % npairs;
            const float alpha = st.abg.x, beta = st.abg.y, gamma = st.abg.z, c = st.cs.x, sn = st.cs.y;
            const float q0 = beta * st.bp.x, q1 = beta * st.bp.y;
            float4* dst = reinterpret_cast<float4*>(sm + lay.coef) + ((buf * K + tl) * npairs + jj) * 4;
            dst[0] = make_float4(alpha * c, alpha * sn, c * q0 - sn * q1, sn * q0 + c * q1);
            dst[1] = make_float4(gamma * st.b.x, gamma * st.b.y, st.next.x * c, st.next.x * sn);
            dst[2] = make_float4(c * st.c.x + sn * st.c.y, -sn * st.c.x + c * st.c.y, st.b.x, st.b.y);
            dst[3] = make_float4(st.c.x, st.c.y, st.b.x * st.c.x + st.b.y * st.c.y, 0.f);
            if (jj == 0) {
                float* p = sm + lay.stp + (buf * K + tl) * 8;
                p[0] = alpha; p[1] = beta; p[2] = gamma; p[3] = st.dtv;
                p[4] = st.lamv; p[5] = st.next.x; p[6] = st.next.y; p[7] = 0.f;
            }
        }
        if (f < x_items) {
            const int r = f / CG, g = f % CG;
            float* dst = r <= K ? sm + lay.xs + (buf * (K + 1) + r) * CB : sm + lay.dys + (buf * K + r - (K + 1)) * CB;
            *reinterpret_cast<float4*>(dst + g * CPT) = st.v;
        }
    };
    auto stage_all = [&](int t0, int buf) {  // synchronous staging in as many rounds as needed
        const int items = max(coef_items, x_items);
        for (int f = tid; f < items; f += NT) stage_store(stage_load(t0, f), buf, f);
    };
    // h_{t0-1} = hloc + m h_{ts-1}: the local checkpoint and its factor m here,
    // h_{ts-1} (kept in shared memory) added when the chunk starts. At the
    // segment's start the checkpoint is h_{ts-1} itself (hloc = 0, m = 1).
    auto load_ckpt = [&](int t0, float (&r0)[CPT], float (&r1)[CPT], float2& m) {
        if (t0 == ts || !active) {
#pragma unroll
            for (int k = 0; k < CPT; ++k) r0[k] = r1[k] = 0.f;
            m = make_float2(1.f, 0.f);
            return;
        }
        const float* base = ckpt + ((size_t)bh * s.nch + t0 / K) * N * s.Pp + p0;
        const float4 a = *reinterpret_cast<const float4*>(base + (2 * j) * s.Pp);
        const float4 c = *reinterpret_cast<const float4*>(base + (2 * j + 1) * s.Pp);
        r0[0] = a.x; r0[1] = a.y; r0[2] = a.z; r0[3] = a.w;
        r1[0] = c.x; r1[1] = c.y; r1[2] = c.z; r1[3] = c.w;
        m = mck[((size_t)bh * s.nch + t0 / K) * npairs + j];
    };
    float* hst = sm + lay.hst + tid;  // [row r][column k] at stride MAX_THREADS
    if (active) {
        const float* base = hseg + ((size_t)bh * s.nseg + seg) * N * s.Pp + p0;
        const float4 a = *reinterpret_cast<const float4*>(base + (2 * j) * s.Pp);
        const float4 c = *reinterpret_cast<const float4*>(base + (2 * j + 1) * s.Pp);
        hst[0 * MAX_THREADS] = a.x; hst[1 * MAX_THREADS] = a.y; hst[2 * MAX_THREADS] = a.z; hst[3 * MAX_THREADS] = a.w;
        hst[4 * MAX_THREADS] = c.x; hst[5 * MAX_THREADS] = c.y; hst[6 * MAX_THREADS] = c.z; hst[7 * MAX_THREADS] = c.w;
    }

    // ---- per-thread state: W = W_{t+1} of the next step to process
    float w0[CPT] = {}, w1[CPT] = {};
    if (active && te < L) {
        const float* base = wcarry + ((size_t)bh * s.nseg + seg) * N * s.Pp + p0;
        const float4 a = *reinterpret_cast<const float4*>(base + (2 * j) * s.Pp);
        const float4 c = *reinterpret_cast<const float4*>(base + (2 * j + 1) * s.Pp);
        w0[0] = a.x; w0[1] = a.y; w0[2] = a.z; w0[3] = a.w;
        w1[0] = c.x; w1[1] = c.y; w1[2] = c.z; w1[3] = c.w;
    }

    const int first_chunk = (te - 1) / K, last_chunk = ts / K;
    float hp0[CPT], hp1[CPT];  // h_{t0-1}, the chunk's checkpoint (then the next chunk's, prefetched)
    float2 hm;                 // its factor m
    load_ckpt(first_chunk * K, hp0, hp1, hm);
    stage_all(first_chunk * K, first_chunk & 1);
    __syncthreads();

    for (int chunk = first_chunk; chunk >= last_chunk; --chunk) {
        const int t0 = chunk * K, buf = chunk & 1;
        const float4* coef = reinterpret_cast<const float4*>(sm + lay.coef) + buf * K * npairs * 4;
        const float* xs = sm + lay.xs + buf * (K + 1) * CB;
        const float* dys = sm + lay.dys + buf * K * CB;
        const float* stp = sm + lay.stp + buf * K * 8;
        const bool has_next = chunk > last_chunk;
        Staged next{};
        if (active) {
#pragma unroll
            for (int k = 0; k < CPT; ++k) {
                const float s0 = hst[k * MAX_THREADS], s1 = hst[(CPT + k) * MAX_THREADS];
                hp0[k] = fmaf(hm.x, s0, fmaf(-hm.y, s1, hp0[k]));
                hp1[k] = fmaf(hm.y, s0, fmaf(hm.x, s1, hp1[k]));
            }
        }

#pragma unroll
        for (int half = 1; half >= 0; --half) {
            // Recompute the half's states from the checkpoint: st[hl] = h_{t0+4*half+hl},
            // pv = the state before them. Keeping only half of the chunk's states in
            // registers costs four recomputed steps per chunk and leaves room for prefetching.
            float st0[HALF][CPT], st1[HALF][CPT], pv0[CPT], pv1[CPT];
            if (active) {
#pragma unroll
                for (int k = 0; k < CPT; ++k) {
                    pv0[k] = hp0[k];
                    pv1[k] = hp1[k];
                }
#pragma unroll
                for (int tl = 0; tl < (half + 1) * HALF; ++tl) {  // steps past L have zero coefficients
                    const float4 fa = coef[(tl * npairs + j) * 4];
                    const float4 fb = coef[(tl * npairs + j) * 4 + 1];
                    const float4 xv = *reinterpret_cast<const float4*>(xs + (tl + 1) * CB + cg * CPT);
                    const float4 xq = *reinterpret_cast<const float4*>(xs + tl * CB + cg * CPT);
                    const int hl = tl - half * HALF;
#pragma unroll
                    for (int k = 0; k < CPT; ++k) {
                        const float a0 = hl > 0 ? st0[hl - 1][k] : pv0[k], a1 = hl > 0 ? st1[hl - 1][k] : pv1[k];
                        const float n0 = fmaf(fa.x, a0, fmaf(-fa.y, a1, fmaf(fa.z, get(xq, k), fb.x * get(xv, k))));
                        const float n1 = fmaf(fa.y, a0, fmaf(fa.x, a1, fmaf(fa.w, get(xq, k), fb.y * get(xv, k))));
                        if (hl >= 0) {
                            st0[hl][k] = n0;
                            st1[hl][k] = n1;
                        } else {
                            pv0[k] = n0;
                            pv1[k] = n1;
                        }
                    }
                }
            }
            if (half == 0 && has_next) {  // the checkpoint is used: prefetch the next chunk's
                load_ckpt(t0 - K, hp0, hp1, hm);
                if (one_round) next = stage_load(t0 - K, tid);
            }

            // ---- reverse steps t0+4*half+3 .. t0+4*half
            if (active) {
#pragma unroll
                for (int hl = HALF - 1; hl >= 0; --hl) {
                    const int tl = half * HALF + hl;
                    const float4 fb = coef[(tl * npairs + j) * 4 + 1];  // z, w: alpha_{t+1} cos, sin
                    const float4 rc = coef[(tl * npairs + j) * 4 + 2];  // R^T C, B
                    const float4 xv = *reinterpret_cast<const float4*>(xs + (tl + 1) * CB + cg * CPT);
                    const float4 gv = *reinterpret_cast<const float4*>(dys + tl * CB + cg * CPT);
                    float q0 = 0.f, q1 = 0.f, dc0 = 0.f, dc1 = 0.f, cr = 0.f, dd = 0.f, X[CPT];
#pragma unroll
                    for (int k = 0; k < CPT; ++k) {
                        const float h0 = st0[hl][k], h1 = st1[hl][k], xk = get(xv, k), gk = get(gv, k);
                        const float p0v = hl ? st0[hl - 1][k] : pv0[k], p1v = hl ? st1[hl - 1][k] : pv1[k];
                        q0 = fmaf(w0[k], xk, q0);
                        q1 = fmaf(w1[k], xk, q1);
                        X[k] = fmaf(rc.z, w0[k], rc.w * w1[k]);
                        dc0 = fmaf(h0, gk, dc0);
                        dc1 = fmaf(h1, gk, dc1);
                        cr = fmaf(w1[k], h0, fmaf(-w0[k], h1, cr));
                        const float n0 = fmaf(fb.z, w0[k], fmaf(fb.w, w1[k], rc.x * gk));
                        const float n1 = fmaf(-fb.w, w0[k], fmaf(fb.z, w1[k], rc.y * gk));
                        w0[k] = n0;
                        w1[k] = n1;
                        dd = fmaf(n0, p0v, fmaf(n1, p1v, dd));
                    }
                    float* r = sm + lay.rp + (hl * npairs + j) * lay.RS + cg;
                    r[0 * lay.VS] = q0; r[1 * lay.VS] = q1; r[2 * lay.VS] = dc0;
                    r[3 * lay.VS] = dc1; r[4 * lay.VS] = cr; r[5 * lay.VS] = dd;
                    *reinterpret_cast<float4*>(sm + lay.xp + (hl * npairs + j) * CB + cg * CPT) =
                        make_float4(X[0], X[1], X[2], X[3]);
                }
            }
            __syncthreads();

            // ---- P1: column sums per (step, pair), row sums per (step, column), x.dy and B.C per step
            for (int f = tid; f < HALF * npairs * NV; f += NT) {
                const int hl = f / (npairs * NV), jj = (f / NV) % npairs, v = f % NV;
                const float* r = sm + lay.rp + (hl * npairs + jj) * lay.RS + v * lay.VS;
                float acc = 0.f;
                for (int g = 0; g < CGv; ++g) acc += r[g];
                sm[lay.rs + (hl * npairs + jj) * 8 + v] = acc;
            }
            for (int f = tid; f < HALF * CBv; f += NT) {
                const int hl = f / CBv, col = f % CBv;
                const float* r = sm + lay.xp + hl * npairs * CB + col;
                float acc = 0.f;
                for (int jj = 0; jj < npairs; ++jj) acc += r[jj * CB];
                sm[lay.xsum + hl * CB + col] = acc;
            }
            for (int hl = warp; hl < HALF; hl += nwarps) {
                const int tl = half * HALF + hl;
                float xy = 0.f, bc = 0.f;
                for (int col = lane; col < CBv; col += 32) xy += xs[(tl + 1) * CB + col] * dys[tl * CB + col];
                for (int jj = lane; jj < npairs; jj += 32) bc += coef[(tl * npairs + jj) * 4 + 3].z;
                xy = warp_sum(xy);
                bc = warp_sum(bc);
                if (lane == 0) {
                    sm[lay.hsc + hl * 2] = xy;
                    sm[lay.hsc + hl * 2 + 1] = bc;
                }
            }
            __syncthreads();

            // ---- P2: dB, dC, dtheta per (step, pair); dx per (step, column)
            for (int f = tid; f < HALF * npairs; f += NT) {
                const int hl = f / npairs, jj = f % npairs, tl = half * HALF + hl, T = t0 + tl;
                if (T >= L) continue;
                float* r = sm + lay.rs + (hl * npairs + jj) * 8;
                const float Q0 = r[0], Q1 = r[1], dC0 = r[2], dC1 = r[3], CR = r[4];
                const float gamma = stp[tl * 8 + 2], an = stp[tl * 8 + 5], bn = stp[tl * 8 + 6];
                const float xy = sm[lay.hsc + hl * 2];
                const float4 rc = coef[(tl * npairs + jj) * 4 + 2];
                const float4 cc = coef[(tl * npairs + jj) * 4 + 3];
                const float B0 = rc.z, B1 = rc.w, C0 = cc.x, C1 = cc.y;
                const float k = fmaf(gamma, an, bn);  // dS_t = gamma G_t + beta_{t+1} W_{t+1}
                const float GX0 = fmaf(an, Q0, C0 * xy), GX1 = fmaf(an, Q1, C1 * xy);  // G_t x_t
                const float dB0 = fmaf(k, Q0, gamma * C0 * xy), dB1 = fmaf(k, Q1, gamma * C1 * xy);
                const float dth = fmaf(an, CR, C1 * dC0 - C0 * dC1) - gamma * (B0 * GX1 - B1 * GX0);
                const int row = row_of(s, b, T, h);
                if (accumulate) {
                    atomicAdd(dB + row * N + 2 * jj, dB0);
                    atomicAdd(dB + row * N + 2 * jj + 1, dB1);
                    atomicAdd(dC + row * N + 2 * jj, dC0);
                    atomicAdd(dC + row * N + 2 * jj + 1, dC1);
                    atomicAdd(dtheta + row * npairs + jj, dth);
                } else {
                    *reinterpret_cast<float2*>(dB + row * N + 2 * jj) = make_float2(dB0, dB1);
                    *reinterpret_cast<float2*>(dC + row * N + 2 * jj) = make_float2(dC0, dC1);
                    dtheta[row * npairs + jj] = dth;
                }
                r[6] = r[5];                            // this pair's share of dalpha_t
                r[7] = fmaf(B0, Q0, B1 * Q1);           // and of dbeta_{t+1} = B_t . (W_{t+1} x_t)
            }
            for (int f = tid; f < HALF * CBv; f += NT) {
                const int hl = f / CBv, col = f % CBv, tl = half * HALF + hl, T = t0 + tl;
                if (T >= L) continue;
                const float gamma = stp[tl * 8 + 2], an = stp[tl * 8 + 5], bn = stp[tl * 8 + 6];
                const float bc = sm[lay.hsc + hl * 2 + 1];
                dx[row_of(s, b, T, h) * s.P + pb + col] =
                    fmaf(fmaf(gamma, an, bn), sm[lay.xsum + hl * CB + col], fmaf(gamma, bc, skip_h) * dys[tl * CB + col]);
            }
            if (half == 0 && has_next) {  // the next chunk's inputs into the other buffer
                if (one_round)
                    stage_store(next, buf ^ 1, tid);
                else
                    stage_all(t0 - K, buf ^ 1);
            }
            __syncthreads();

            // ---- P3: per-step sums over the pairs, kept for the end of the segment
            for (int hl = warp; hl < HALF; hl += nwarps) {
                const int tl = half * HALF + hl, T = t0 + tl;
                float d = 0.f, bq = 0.f;
                for (int jj = lane; jj < npairs; jj += 32) {
                    d += sm[lay.rs + (hl * npairs + jj) * 8 + 6];
                    bq += sm[lay.rs + (hl * npairs + jj) * 8 + 7];
                }
                d = warp_sum(d);
                bq = warp_sum(bq);
                if (lane == 0 && T < L) {
                    const float xy = sm[lay.hsc + hl * 2], bc = sm[lay.hsc + hl * 2 + 1];
                    float* sg = sm + lay.seg + (T - ts);
                    sg[0] = d;                                  // dalpha_T
                    sg[SEG] = bq;                               // dbeta_{T+1}
                    sg[2 * SEG] = fmaf(stp[tl * 8 + 5], bq, bc * xy);  // dgamma_T = alpha_{T+1} B.Q + (B.C)(x.dy)
                    sg[3 * SEG] = xy;
                }
            }
        }
    }

    // ---- the segment's first step: dbeta_ts = B_{ts-1} . (W_ts x_{ts-1}), W_ts now in w0, w1
    float bq_part = 0.f;
    if (active && ts > 0) {
        const float* xq = sm + lay.xs + (last_chunk & 1) * (K + 1) * CB + cg * CPT;  // x_{ts-1}
        const float2 bp = *reinterpret_cast<const float2*>(B + row_of(s, b, ts - 1, h) * N + 2 * j);
#pragma unroll
        for (int k = 0; k < CPT; ++k) bq_part = fmaf(fmaf(bp.x, w0[k], bp.y * w1[k]), xq[k], bq_part);
    }
    auto block_sum = [&](float v) {  // every thread gets the sum
        v = warp_sum(v);
        __syncthreads();
        if (lane == 0) sm[lay.red + warp] = v;
        __syncthreads();
        float total = 0.f;
        for (int w = 0; w < nwarps; ++w) total += sm[lay.red + w];
        return total;
    };
    const float dbeta_first = block_sum(bq_part);

    // ---- ddt and dlam of every step of the segment; the block's shares of dA and dskip
    float dA_part = 0.f, dskip_part = 0.f;
    for (int f = tid; f < te - ts; f += NT) {
        const int T = ts + f, row = row_of(s, b, T, h);
        const float* sg = sm + lay.seg + f;
        const float alpha = abg[row].x, d = dt[row], l = lam[row];
        const float dalpha = sg[0], dgamma = sg[2 * SEG];
        const float dbeta = f > 0 ? sg[SEG - 1] : (T > 0 ? dbeta_first : 0.f);
        const float g_dt = A_h * alpha * dalpha + (1.f - l) * (1.f + d * A_h) * alpha * dbeta + l * dgamma;
        const float g_lam = d * (dgamma - alpha * dbeta);
        if (accumulate) {
            atomicAdd(ddt + row, g_dt);
            atomicAdd(dlam + row, g_lam);
        } else {
            ddt[row] = g_dt;
            dlam[row] = g_lam;
        }
        dA_part += d * alpha * (dalpha + (1.f - l) * d * dbeta);
        dskip_part += sg[3 * SEG];
    }
    dA_part = block_sum(dA_part);
    dskip_part = block_sum(dskip_part);
    if (tid == 0) parts[blockIdx.x] = make_float2(dA_part, dskip_part);
}

// ---------------------------------------------------------------------------
// 4. per-head sums of the blocks' shares

__global__ void head_sums_kernel(const float2* __restrict__ parts, float* __restrict__ dA, float* __restrict__ dskip,
                                 int batch, int H, int per_head) {
    const int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= H) return;
    float a = 0.f, k = 0.f;
    for (int b = 0; b < batch; ++b)
        for (int i = 0; i < per_head; ++i) {
            const float2 v = parts[(b * H + h) * per_head + i];
            a += v.x;
            k += v.y;
        }
    dA[h] = a;
    dskip[h] = k;
}

// Scratch grows to the largest size seen and is kept between calls.
char* g_scratch = nullptr;
size_t g_scratch_bytes = 0;
int g_smem_attr = 0;

}  // namespace

extern "C" void solve(const float* x, const float* B, const float* C, const float* dt, const float* A,
                      const float* lam, const float* theta, const float* skip, const float* dy, float* dx, float* dB,
                      float* dC, float* ddt, float* dA, float* dlam, float* dtheta, float* dskip, int batch,
                      int seq_len, int n_heads, int head_dim, int d_state) {
    if (batch <= 0 || seq_len <= 0 || n_heads <= 0 || head_dim <= 0 || d_state < 2) return;
    Sizes s;
    s.batch = batch; s.L = seq_len; s.H = n_heads; s.P = head_dim; s.N = d_state;
    s.npairs = d_state / 2;
    s.Pp = (head_dim + CPT - 1) / CPT * CPT;
    s.nch = (seq_len + K - 1) / K;
    s.nseg = (seq_len + SEG - 1) / SEG;
    const int CGt = s.Pp / CPT;
    const int CG = min(CGt, MAX_THREADS / s.npairs);
    const int ncb = (CGt + CG - 1) / CG;
    const int threads = (s.npairs * CG + 31) / 32 * 32;
    const int rows = batch * seq_len * n_heads;
    const int bh = batch * n_heads;
    const int blocks = bh * s.nseg * ncb;

    auto align = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t cs_bytes = align(sizeof(float2) * rows * s.npairs);
    const size_t abg_bytes = align(sizeof(float4) * rows);
    const size_t ckpt_bytes = align(sizeof(float) * bh * s.nch * d_state * s.Pp);
    const size_t mck_bytes = align(sizeof(float2) * bh * s.nch * s.npairs);
    const size_t seg_bytes = align(sizeof(float) * bh * s.nseg * d_state * s.Pp);
    const size_t mseg_bytes = align(sizeof(float2) * bh * s.nseg * s.npairs);
    const size_t parts_bytes = align(sizeof(float2) * blocks);
    const size_t need = cs_bytes + abg_bytes + ckpt_bytes + mck_bytes + 2 * seg_bytes + 2 * mseg_bytes + parts_bytes;
    if (need > g_scratch_bytes) {
        if (g_scratch) cudaFree(g_scratch);
        if (cudaMalloc(&g_scratch, need) != cudaSuccess) {
            g_scratch = nullptr;
            g_scratch_bytes = 0;
            return;
        }
        g_scratch_bytes = need;
    }
    char* at = g_scratch;
    auto carve = [&](size_t bytes) { char* here = at; at += bytes; return here; };
    float2* cs = reinterpret_cast<float2*>(carve(cs_bytes));
    float4* abg = reinterpret_cast<float4*>(carve(abg_bytes));
    float* ckpt = reinterpret_cast<float*>(carve(ckpt_bytes));
    float2* mck = reinterpret_cast<float2*>(carve(mck_bytes));
    float* hseg = reinterpret_cast<float*>(carve(seg_bytes));
    float* wseg = reinterpret_cast<float*>(carve(seg_bytes));
    float2* mseg = reinterpret_cast<float2*>(carve(mseg_bytes));
    float2* mrseg = reinterpret_cast<float2*>(carve(mseg_bytes));
    float2* parts = reinterpret_cast<float2*>(carve(parts_bytes));

    const bool accumulate = ncb > 1;  // column blocks add their shares of the column sums
    if (accumulate) {
        cudaMemsetAsync(dB, 0, sizeof(float) * rows * d_state);
        cudaMemsetAsync(dC, 0, sizeof(float) * rows * d_state);
        cudaMemsetAsync(dtheta, 0, sizeof(float) * rows * s.npairs);
        cudaMemsetAsync(ddt, 0, sizeof(float) * rows);
        cudaMemsetAsync(dlam, 0, sizeof(float) * rows);
    }

    coefficients_kernel<<<min((rows * s.npairs + 255) / 256, 4096), 256>>>(dt, A, lam, theta, cs, abg, rows,
                                                                            n_heads, s.npairs);
    const int sweep_threads = 2 * bh * s.nseg * s.npairs * CGt;
    segment_sweeps_kernel<<<(sweep_threads + 127) / 128, 128>>>(x, B, C, dy, cs, abg, ckpt, mck, hseg, mseg, wseg,
                                                                 mrseg, s);
    const int carry_threads = bh * s.npairs * s.Pp;
    segment_carries_kernel<<<(carry_threads + 127) / 128, 128>>>(hseg, mseg, wseg, mrseg, s);

    const Layout lay(s.npairs, CG);
    const int smem = static_cast<int>(sizeof(float) * lay.total);
    if (smem > g_smem_attr) {
        cudaFuncSetAttribute(backward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        g_smem_attr = smem;
    }
    backward_kernel<<<blocks, threads, smem>>>(x, B, C, dt, A, lam, skip, dy, cs, abg, ckpt, mck, hseg, wseg, dx, dB, dC, ddt,
                                               dlam, dtheta, parts, s, CG, ncb, accumulate);
    head_sums_kernel<<<(n_heads + 127) / 128, 128>>>(parts, dA, dskip, batch, n_heads, s.nseg * ncb);
}
