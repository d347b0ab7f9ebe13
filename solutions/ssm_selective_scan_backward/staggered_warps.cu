// ssm_selective_scan_backward, staggered warps: reference/ssm_selective_scan_backward.cu
// with the second warp of each scheduler half a segment behind the first in
// `gradients`. In the reference both warps of a scheduler run a segment's
// forward sweep (32 MUFU.EX2 in 160 instructions per 2 steps: 256 cycles of
// the scheduler's share of the MUFU for 160 of issue) at the same time, the
// segment's barrier keeping them in step, then its reverse sweep (64 in 1,096
// per 4 steps). Here warps 4..7 run segment i's reverse sweep, then segment
// i + 1's forward sweep, while warps 0..3 run segment i's forward, then its
// reverse, so each forward sweep meets the other warp's reverse. The cost:
// segment i + 1 is waited for one interval after its copies go out instead of
// two. The warp index that picks a warp's half comes through a shuffle from
// lane 0, so the compiler knows the branch is uniform across the warp: with
// `pl.warp` itself each reverse step checked for divergence (1,123
// instructions per 4 steps; now 1,089, the reference's 1,096).
// reference/ssm_selective_scan_backward.md ("Staggered warps") has the count
// behind it and the prediction.
//
// Notation (spec.md, "Math"): per channel (b, d) and state n,
//   a[t] = exp(delta[t]*A), x[t] = delta[t]*u[t], h[t] = a[t]*h[t-1] + x[t]*B[t],
//   g[t] = C[t]*dy[t] + a[t+1]*g[t+1],  q[t] = g[t]*a[t]*h[t-1] = g[t]*(h[t] - x[t]*B[t]),
//   du = delta * sum_n g*B + skip*dy,  ddelta = sum_n A*q + u * sum_n g*B,
//   dA = sum_{b,t} delta*q,  dB = sum_d g*x,  dC = sum_d dy*h,  dskip = sum_{b,t} dy*u.
//
// Layout: a block = 256 channels of one batch row and 16 states, 8 warps; a
// warp = 32 channels; lane = (channel lane cl = lane >> 2, state lane sl =
// lane & 3) holds channels 4cl .. 4cl+3 of its warp and states 4sl .. 4sl+3.
// The sums over states (du, ddelta) add 4 states in registers, then 4 lanes
// (lane bits 0, 1); the sums over channels (dB, dC) add 4 channels in
// registers, then 8 lanes (bits 2, 3, 4), then 8 warps through shared memory,
// then the blocks of channels in finish_bc. Time in pieces of whole 8-step
// segments, as many as fill the SMs with one block each:
//
//  1. forward_pieces: per piece, h from 0 at its start (stored before every
//     segment, with the channel's delta summed since the piece's start),
//     and the piece's summary: its end state, W = a[t_s]*...*a[t_e] and
//     G = sum_s (a[t_s]*...*a[s]) C[s] dy[s], which is what the piece sends
//     back: a[t_s]*g[t_s] given no adjoint entering it from later.
//  2. gradients: the true state entering the piece, chained through the
//     earlier pieces' summaries (h_in(p+1) = h_end(p) + W(p) h_in(p)), and
//     the a*g entering it at its end, through the later ones (Gin(p-1) =
//     G(p) + W(p) Gin(p)). Segments last to first: the state before the
//     segment = its checkpoint (loaded a segment ahead) + exp(A * delta
//     summed) * h_in; 8 steps forward keeping a*h[t-1] per chain and step in
//     shared memory; 8 steps backward with every gradient term, a made again
//     from delta (keeping a too would take 256 KB a block, or 4-step segments
//     and twice the checkpoints' bytes, which measured slower).
//     Warps 4..7 run each segment's forward sweep half an interval after
//     warps 0..3 (above).
//  3. finish, one launch per group of states: its first blocks sum dB, dC
//     over the blocks of channels; in the last group's launch, the blocks
//     after them sum dA and dskip over the (piece, batch row) slices. Fixed
//     orders, no atomics.
//
// Every size takes the same code: states in groups of 16 (padded states have
// A = B = C = 0 and stay 0; groups after the first add into du and ddelta),
// ragged channels and steps stage zeros (a = 1, no input) and are not stored,
// batch rows run in groups that keep the scratch under kScratchCap.

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kChannels = kWarps * 32;  // per block: 8 channel lanes x 4 channels per warp
constexpr int kNS = 16;                 // states per group: 4 state lanes x 4
constexpr int kChains = 16;             // per lane: 4 channels x 4 states, chain 4j + i
constexpr int kSeg = 8;                 // steps per segment (checkpoint interval)
constexpr int kRing = 3;                // staged segments: one in use, two in flight
constexpr size_t kScratchCap = size_t(256) << 20;  // bytes

// A staged segment: rows delta, u, dy [kSeg][kChannels], then B, C [kSeg][kNS].
constexpr int kOffU = kSeg * kChannels, kOffY = 2 * kSeg * kChannels;
constexpr int kOffB = 3 * kSeg * kChannels, kOffC = kOffB + kSeg * kNS;
constexpr int kStage = kOffC + kSeg * kNS;
// A segment's history per thread: per step 4 float4 (a*h[t-1] of chains 0..15),
// at [step][float4][thread] so that a warp's accesses are consecutive.
constexpr int kHist = kSeg * 4 * kThreads * 4;
// dB and dC per (step, warp, lane) after the in-warp sums; two, used in turn.
constexpr int kRed = kSeg * kWarps * 32;
constexpr int kCkpt = kChains * kThreads;  // floats of one block's checkpoint
constexpr int kSummary = 3 * kCkpt;        // h_end, W, G
constexpr size_t kSmemA = sizeof(float) * kRing * kStage;
constexpr size_t kSmemB = sizeof(float) * (kHist + kRing * kStage + 2 * kRed);

struct Sizes {
    int L, D, N, n0, tiles, nseg, pieces, spp, row0, batch;
    bool wide_d, wide_n;  // rows stage 16 bytes at a time (D % 4 == 0, N % 4 == 0)
};

struct Inputs {
    const float *u, *delta, *A, *B, *C, *skip, *dy;
};

struct Scratch {
    float* ckpt;     // [row][tile][segment][4 float4][thread]: h from the piece's start
    float* dcum;     // [row][tile][segment][channel]: delta summed from the piece's start
    float* summary;  // [row][tile][piece][12 float4][thread]: h_end, W, G
    float* bc;       // [row][tile][t][32]: dC (slots 0..15), dB (16..31) over the block's channels
    float* dA_part;  // [piece][batch row][d][n]
    float* dskip_part;  // [piece][batch row][d]
};

__device__ __forceinline__ float ex2(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void copy4(float* dst, const float* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void copy16(float* dst, const float* src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void unpack(float4 v, float (&r)[4]) {
    r[0] = v.x;
    r[1] = v.y;
    r[2] = v.z;
    r[3] = v.w;
}

// One level of a reduce-scatter: the lane keeps hi if `upper`, else lo, and adds
// what its partner across `mask` sent of the same slot.
__device__ __forceinline__ float fold(float lo, float hi, bool upper, int mask) {
    return (upper ? hi : lo) + __shfl_xor_sync(kFull, upper ? lo : hi, mask);
}

// Where a thread is: its block's batch row, channels and piece, its lane's
// channels and states.
struct Place {
    int tid, warp, lane, cl, sl;
    int rl, tile, piece, d0, chan;  // chan: the lane's first channel within the block
    int seg_begin, seg_end;         // the piece's segments
    __device__ explicit Place(const Sizes& z) {
        tid = threadIdx.x;
        warp = tid >> 5;
        lane = tid & 31;
        cl = lane >> 2;
        sl = lane & 3;
        rl = blockIdx.x / z.tiles;
        tile = blockIdx.x % z.tiles;
        piece = blockIdx.y;
        d0 = tile * kChannels;
        chan = warp * 32 + cl * 4;
        seg_begin = piece * z.spp;
        seg_end = min(z.nseg, seg_begin + z.spp);
    }
    __device__ size_t block_index(const Sizes& z) const { return static_cast<size_t>(rl) * z.tiles + tile; }
};

// A thread's share of staging a segment into a ring buffer; zeros past seq_len,
// d_model and d_state. With 16-byte rows (wide) a thread copies 4 channels of
// the same rows of each of delta, u, dy every segment (steps warp / 2 and
// warp / 2 + 4 with 8 warps), and threads 0..63 one row of 4 states of B or C: offsets
// fixed here, one 64-bit add a segment (with
// the indices worked out per copy the staging took about 60 instructions a
// step, SASS). Other widths copy 4 bytes at a time, indices per copy.
struct Stager {
    const float *delta, *u, *dy, *B, *C;
    long long row;  // (b, t = 0)
    int L, D, N, d0, n0, tid;
    bool wide_d, wide_n;

    __device__ Stager(const Inputs& in, const Sizes& z, const Place& pl)
        : delta(in.delta), u(in.u), dy(in.dy), B(in.B), C(in.C),
          row(static_cast<long long>(z.row0 + pl.rl) * z.L), L(z.L), D(z.D), N(z.N), d0(pl.d0), n0(z.n0),
          tid(pl.tid), wide_d(z.wide_d), wide_n(z.wide_n) {}

    __device__ void operator()(float* buf, int seg) const {
        const int t0 = seg * kSeg;
        if (wide_d) {
            constexpr int kGroups = kChannels / 4, kRows = kThreads / kGroups;  // per row; rows a pass
            const int c = 4 * (tid % kGroups);
            const bool d_ok = d0 + c < D;
            const long long first = (row + t0) * D + d0 + c;
#pragma unroll
            for (int pass = 0; pass < (kSeg + kRows - 1) / kRows; ++pass) {
                const int r = tid / kGroups + kRows * pass;
                if (kSeg % kRows != 0 && r >= kSeg) break;
                const bool ok = d_ok && t0 + r < L;
                const long long o = first + static_cast<long long>(r) * D;
                float* dst = buf + r * kChannels + c;
                copy16(dst, ok ? delta + o : delta, ok);
                copy16(dst + kOffU, ok ? u + o : u, ok);
                copy16(dst + kOffY, ok ? dy + o : dy, ok);
            }
        } else {
            for (int e = tid; e < 3 * kSeg * kChannels; e += kThreads) {
                const int arr = e / (kSeg * kChannels), r = (e / kChannels) % kSeg, c = e % kChannels;
                const bool ok = t0 + r < L && d0 + c < D;
                const float* base = arr == 0 ? delta : arr == 1 ? u : dy;
                copy4(buf + arr * kSeg * kChannels + r * kChannels + c, ok ? base + (row + t0 + r) * D + d0 + c : base, ok);
            }
        }
        if (wide_n) {
            if (tid < 2 * kSeg * kNS / 4) {
                const int arr = tid / (kSeg * kNS / 4), r = (tid / (kNS / 4)) % kSeg, c = 4 * (tid % (kNS / 4));
                const bool ok = t0 + r < L && n0 + c < N;
                const float* base = arr == 0 ? B : C;
                copy16(buf + kOffB + arr * kSeg * kNS + r * kNS + c, ok ? base + (row + t0 + r) * N + n0 + c : base, ok);
            }
        } else {
            for (int e = tid; e < 2 * kSeg * kNS; e += kThreads) {
                const int arr = e / (kSeg * kNS), r = (e / kNS) % kSeg, c = e % kNS;
                const bool ok = t0 + r < L && n0 + c < N;
                const float* base = arr == 0 ? B : C;
                copy4(buf + kOffB + arr * kSeg * kNS + r * kNS + c, ok ? base + (row + t0 + r) * N + n0 + c : base, ok);
            }
        }
    }
};

// The block's segments in the order it walks them (dir = 1 forward, -1 back),
// each staged two segments ahead into a ring of kRing buffers.
struct SegmentWalk {
    Stager stage;
    float* ring;
    int first, dir, count;

    __device__ int seg(int i) const { return first + dir * i; }
    __device__ void start() const {
        for (int i = 0; i < 2; ++i) {
            if (i < count) stage(ring + i * kStage, seg(i));
            copy_commit();  // one group per segment, empty or not, so that the waits count right
        }
    }
    // The i-th segment's buffer, once every thread's copies of it have landed;
    // the (i + 2)-th goes in flight into the buffer the (i - 1)-th used.
    __device__ const float* next(int i) const {
        copy_wait_one();
        __syncthreads();  // segment i staged by every thread; no thread still reads segment i - 1
        if (i + 2 < count) stage(ring + ((i + 2) % kRing) * kStage, seg(i + 2));
        copy_commit();
        return ring + (i % kRing) * kStage;
    }
    // As next(i), but segment i + 1 landed too (gradients' lagging warps sweep
    // it forward in interval i): its copies went out one interval ago, not two.
    __device__ void next_two(int i) const {
        copy_wait_all();
        __syncthreads();  // segments i, i + 1 staged by every thread; no thread still reads segment i - 1
        if (i + 2 < count) stage(buffer(i + 2), seg(i + 2));
        copy_commit();
    }
    __device__ float* buffer(int i) const { return ring + (i % kRing) * kStage; }
};

// A*log2(e) of the lane's chains (a = ex2(delta*A2), one multiply fewer a
// chain and step), 0 where the channel or the state is out of range.
__device__ void load_A2(const Inputs& in, const Sizes& z, const Place& pl, float (&A2)[kChains]) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int d = pl.d0 + pl.chan + j, n = z.n0 + 4 * pl.sl + i;
            A2[4 * j + i] = d < z.D && n < z.N ? in.A[d * z.N + n] * kLog2e : 0.f;
        }
}

// The step's inputs of the lane: delta, u, dy of its 4 channels, B and C of its 4 states.
struct Step {
    float dl[4], u[4], dy[4], b[4], c[4];
    __device__ Step(const float* buf, const Place& pl, int k) {
        unpack(ld4(buf + k * kChannels + pl.chan), dl);
        unpack(ld4(buf + kOffU + k * kChannels + pl.chan), u);
        unpack(ld4(buf + kOffY + k * kChannels + pl.chan), dy);
        unpack(ld4(buf + kOffB + k * kNS + 4 * pl.sl), b);
        unpack(ld4(buf + kOffC + k * kNS + 4 * pl.sl), c);
    }
};

// The lane's 16 floats at float4 slots first .. first + 3 of a [slot][thread] array in global memory.
__device__ __forceinline__ void load16(const float* base, int first, int tid, float (&v)[kChains]) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float4 f = __ldcg(reinterpret_cast<const float4*>(base) + (first + q) * kThreads + tid);
        v[4 * q] = f.x;
        v[4 * q + 1] = f.y;
        v[4 * q + 2] = f.z;
        v[4 * q + 3] = f.w;
    }
}

__device__ __forceinline__ void store16(float* base, int first, int tid, const float (&v)[kChains]) {
#pragma unroll
    for (int q = 0; q < 4; ++q)
        __stcg(reinterpret_cast<float4*>(base) + (first + q) * kThreads + tid,
               make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]));
}

__global__ void __launch_bounds__(kThreads) forward_pieces(Inputs in, Sizes z, Scratch s) {
    extern __shared__ float4 smem4[];
    float* ring = reinterpret_cast<float*>(smem4);
    const Place pl(z);
    float A2[kChains];
    load_A2(in, z, pl, A2);
    float h[kChains], W[kChains], G[kChains], dcum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
        h[c] = 0.f;
        W[c] = 1.f;
        G[c] = 0.f;
    }
    const size_t blk = pl.block_index(z);
    const SegmentWalk walk{Stager(in, z, pl), ring, pl.seg_begin, 1, pl.seg_end - pl.seg_begin};
    walk.start();
    for (int i = 0; i < walk.count; ++i) {
        const int seg = walk.seg(i);
        const float* buf = walk.next(i);
        store16(s.ckpt + (blk * z.nseg + seg) * kCkpt, 0, pl.tid, h);
        if (pl.sl == 0)
            __stcg(reinterpret_cast<float4*>(s.dcum + (blk * z.nseg + seg) * kChannels + pl.chan),
                   make_float4(dcum[0], dcum[1], dcum[2], dcum[3]));
#pragma unroll 2
        for (int k = 0; k < kSeg; ++k) {
            const Step st(buf, pl, k);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float x = st.dl[j] * st.u[j];
                dcum[j] += st.dl[j];
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    const int c = 4 * j + n;
                    const float a = ex2(st.dl[j] * A2[c]);
                    h[c] = fmaf(a, h[c], x * st.b[n]);
                    W[c] *= a;
                    G[c] = fmaf(W[c], st.c[n] * st.dy[j], G[c]);
                }
            }
        }
    }
    float* sum = s.summary + (blk * z.pieces + pl.piece) * kSummary;
    store16(sum, 0, pl.tid, h);
    store16(sum, 4, pl.tid, W);
    store16(sum, 8, pl.tid, G);
}

// dB and dC of one segment over the block's warps, into the block's partials.
__device__ void flush_bc(const float* red, const Sizes& z, const Place& pl, float* bc, int seg) {
#pragma unroll
    for (int r = 0; r < (kSeg * 32 + kThreads - 1) / kThreads; ++r) {
        const int o = pl.tid + r * kThreads, k = o / 32, ln = o % 32;
        if (o >= kSeg * 32) break;
        float v = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) v += red[(k * kWarps + w) * 32 + ln];
        // lane ln holds value 4*b2 + 2*b3 + b4 of its (dC[0..3], dB[0..3]) for state lane ln & 3
        const int arr = (ln >> 2) & 1, state = 4 * (ln & 3) + 2 * ((ln >> 3) & 1) + ((ln >> 4) & 1);
        const int t = seg * kSeg + k;
        if (t < z.L) bc[(pl.block_index(z) * z.L + t) * 32 + arr * kNS + state] = v;
    }
}

__global__ void __launch_bounds__(kThreads, 1) gradients(Inputs in, Sizes z, Scratch s, float* du, float* ddelta) {
    extern __shared__ float4 smem4[];
    float* hist = reinterpret_cast<float*>(smem4);
    float* ring = hist + kHist;
    float* red = ring + kRing * kStage;
    const Place pl(z);
    const size_t blk = pl.block_index(z);
    const size_t row = static_cast<size_t>(z.row0 + pl.rl) * z.L;
    const bool first_group = z.n0 == 0;
    float A2[kChains];
    load_A2(in, z, pl, A2);

    // The pieces joined: the true state entering this piece, and a*g entering it from the next.
    float h_in[kChains], ag[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
        h_in[c] = 0.f;
        ag[c] = 0.f;
    }
    // carry = W(p) * carry + part(p): h_end (slot 0) going forward, G (slot 8) going back
    auto through = [&](int p, int part, float(&carry)[kChains]) {
        const float* sum = s.summary + (blk * z.pieces + p) * kSummary;
        float w[kChains], v[kChains];
        load16(sum, 4, pl.tid, w);
        load16(sum, part, pl.tid, v);
#pragma unroll
        for (int c = 0; c < kChains; ++c) carry[c] = fmaf(w[c], carry[c], v[c]);
    };
    for (int p = 0; p < pl.piece; ++p) through(p, 0, h_in);
    for (int p = z.pieces - 1; p > pl.piece; --p) through(p, 8, ag);

    // The lane's own channel after the sums over states: 2*b0 + b1 of its four.
    const int own = 2 * (pl.lane & 1) + ((pl.lane >> 1) & 1);
    const int own_c = pl.chan + own, own_d = pl.d0 + own_c;
    const bool own_ok = own_d < z.D;
    const float skip_own = own_ok && first_group ? in.skip[own_d] : 0.f;
    float dA[kChains], dsk = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) dA[c] = 0.f;

    const SegmentWalk walk{Stager(in, z, pl), ring, pl.seg_end - 1, -1, pl.seg_end - pl.seg_begin};
    walk.start();
    long long o = (row + pl.seg_end * kSeg - 1) * z.D + own_d;  // (b, t, own_d), t walking back
    // each segment's checkpoint loaded one segment ahead, its latency behind a segment's sweeps
    float next_h[kChains];
    float4 next_dc;
    auto load_ckpt = [&](int seg) {
        load16(s.ckpt + (blk * z.nseg + seg) * kCkpt, 0, pl.tid, next_h);
        next_dc = __ldcg(reinterpret_cast<const float4*>(s.dcum + (blk * z.nseg + seg) * kChannels + pl.chan));
    };
    // A segment's forward sweep: the true state before it (its checkpoint + (a product since the
    // piece's start) * h_in), then each step's a*h[t-1] into the history. The next checkpoint is
    // loaded here, a forward sweep ahead of its use.
    auto forward = [&](int i) {
        const float* buf = walk.buffer(i);
        // the true state before the segment: its checkpoint + (a product since the piece's start) * h_in
        float h[kChains];
        {
#pragma unroll
            for (int c = 0; c < kChains; ++c) h[c] = next_h[c];
            float dc[4];
            unpack(next_dc, dc);
            if (i + 1 < walk.count) load_ckpt(walk.seg(i + 1));
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    const int c = 4 * j + n;
                    h[c] = fmaf(ex2(dc[j] * A2[c]), h_in[c], h[c]);
                }
        }
        // forward: each step's a and h into the history
#pragma unroll 2
        for (int k = 0; k < kSeg; ++k) {
            const Step st(buf, pl, k);
            float a[kChains], ah[kChains];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float x = st.dl[j] * st.u[j];
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    const int c = 4 * j + n;
                    a[c] = ex2(st.dl[j] * A2[c]);
                    ah[c] = a[c] * h[c];
                    h[c] = fmaf(x, st.b[n], ah[c]);
                }
            }
            float* hk = hist + k * 4 * kThreads * 4;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                st4(hk + (q * kThreads + pl.tid) * 4, make_float4(ah[4 * q], ah[4 * q + 1], ah[4 * q + 2], ah[4 * q + 3]));
            }
        }
    };
    // A segment's reverse sweep: the adjoint and every gradient term, from the history.
    auto reverse = [&](int i) {
        const int seg = walk.seg(i);
        const float* buf = walk.buffer(i);
        float* redw = red + (i & 1) * kRed;
#pragma unroll 4
        for (int k = kSeg - 1; k >= 0; --k) {
            const Step st(buf, pl, k);
            const float* hk = hist + k * 4 * kThreads * 4;
            float ah[kChains];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float4 fh = ld4(hk + (q * kThreads + pl.tid) * 4);
                ah[4 * q] = fh.x;
                ah[4 * q + 1] = fh.y;
                ah[4 * q + 2] = fh.z;
                ah[4 * q + 3] = fh.w;
            }
            // dC = sum_j dy*h = sum_j dy*(a*h[t-1]) + B * sum_j dy*x: one multiply-add a chain
            float s1[4], s2[4], dC[4] = {0.f, 0.f, 0.f, 0.f}, dB[4] = {0.f, 0.f, 0.f, 0.f}, dyx = 0.f;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float x = st.dl[j] * st.u[j];
                dyx = fmaf(st.dy[j], x, dyx);
                s1[j] = 0.f;
                s2[j] = 0.f;
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    const int c = 4 * j + n;
                    const float g = fmaf(st.c[n], st.dy[j], ag[c]);
                    const float q = g * ah[c];
                    s1[j] = fmaf(g, st.b[n], s1[j]);
                    s2[j] = fmaf(A2[c], q, s2[j]);  // A*q in base 2, scaled back after the sums
                    dA[c] = fmaf(st.dl[j], q, dA[c]);
                    dB[n] = fmaf(g, x, dB[n]);
                    dC[n] = fmaf(st.dy[j], ah[c], dC[n]);
                    ag[c] = ex2(st.dl[j] * A2[c]) * g;  // a, as the forward sweep made it
                }
            }
#pragma unroll
            for (int n = 0; n < 4; ++n) dC[n] = fmaf(st.b[n], dyx, dC[n]);
            // sums over states: lane bits 0 and 1; the lane keeps its own channel's
            const bool b0 = pl.lane & 1, b1 = pl.lane & 2;
            const float t10 = fold(s1[0], s1[2], b0, 1), t11 = fold(s1[1], s1[3], b0, 1);
            const float t20 = fold(s2[0], s2[2], b0, 1), t21 = fold(s2[1], s2[3], b0, 1);
            const float gB = fold(t10, t11, b1, 2), Aq = fold(t20, t21, b1, 2);
            // sums over channels: lane bits 2, 3, 4 over (dC[0..3], dB[0..3])
            const bool b2 = pl.lane & 4, b3 = pl.lane & 8, b4 = pl.lane & 16;
            const float v0 = fold(dC[0], dB[0], b2, 4), v1 = fold(dC[1], dB[1], b2, 4);
            const float v2 = fold(dC[2], dB[2], b2, 4), v3 = fold(dC[3], dB[3], b2, 4);
            const float w0 = fold(v0, v2, b3, 8), w1 = fold(v1, v3, b3, 8);
            redw[(k * kWarps + pl.warp) * 32 + pl.lane] = fold(w0, w1, b4, 16);

            if (own_ok && seg * kSeg + k < z.L) {
                const float* own_in = buf + k * kChannels + own_c;
                const float dl = own_in[0], u = own_in[kOffU], dy = own_in[kOffY];
                const float du_v = fmaf(dl, gB, skip_own * dy), dd_v = fmaf(u, gB, Aq * kLn2);
                if (first_group) {
                    du[o] = du_v;
                    ddelta[o] = dd_v;
                    dsk = fmaf(dy, u, dsk);
                } else {
                    du[o] += du_v;
                    ddelta[o] += dd_v;
                }
            }
            o -= z.D;
        }
    };
    // Warps w and w + 4 share a scheduler (warps go to schedulers by index mod 4). The second of
    // each pair lags half an interval: in interval i it runs segment i's reverse sweep, then
    // segment i + 1's forward sweep, while the first runs segment i's forward sweep, then its
    // reverse. So the forward sweeps (a MUFU.EX2 in 5 instructions, more than the MUFU's quarter
    // of the SM can take) meet the other warp's reverse sweep (one in 17) instead of each other.
    // (the warp index from lane 0: a value the compiler knows is the same across the warp)
    const bool lag = __shfl_sync(0xffffffffu, pl.warp, 0) >= kWarps / 2;
    load_ckpt(walk.seg(0));
    for (int i = 0; i < walk.count; ++i) {
        walk.next_two(i);
        // every warp is done with the last segment's dB and dC
        if (i > 0) flush_bc(red + ((i - 1) & 1) * kRed, z, pl, s.bc, walk.seg(i - 1));
        // half -1: the lagging warps' forward sweep of segment 0, before interval 0's two halves.
        // One call site for each sweep keeps one copy of each in the code (not unrolled).
#pragma unroll 1
        for (int half = lag && i == 0 ? -1 : 0; half < 2; ++half) {
            if (half < 0 || (half == 0) != lag) {
                const int j = half < 0 ? 0 : lag ? i + 1 : i;
                if (j < walk.count) forward(j);
            } else {
                reverse(i);
            }
        }
    }
    __syncthreads();
    flush_bc(red + ((walk.count - 1) & 1) * kRed, z, pl, s.bc, pl.seg_begin);

    const size_t part = static_cast<size_t>(pl.piece) * z.batch + z.row0 + pl.rl;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int n = 0; n < 4; ++n) {
            const int d = pl.d0 + pl.chan + j, nn = z.n0 + 4 * pl.sl + n;
            if (d < z.D && nn < z.N) s.dA_part[(part * z.D + d) * z.N + nn] = dA[4 * j + n];
        }
    // the 4 state lanes of a channel lane own its 4 channels, one each
    if (first_group && own_ok) s.dskip_part[part * z.D + own_d] = dsk;
}

// The sums over slices, one launch: blocks [0, bc_blocks) dB, dC of the group's
// states over the blocks of channels (one thread per (row, step, slot)); the
// blocks after them, launched with the last group only, dA and dskip over the
// (piece, batch row) slices in order.
struct Finish {
    const float *bc, *dA_part, *dskip_part;
    float *dB, *dC, *dA, *dskip;
    int rows, parts;
    unsigned bc_blocks;
};

__device__ void finish_bc(const Finish& f, const Sizes& z, size_t i) {
    const size_t per_row = static_cast<size_t>(z.L) * 32;
    if (i >= f.rows * per_row) return;
    const size_t rl = i / per_row, r = i % per_row;
    const int t = static_cast<int>(r / 32), slot = static_cast<int>(r % 32);
    const int n = z.n0 + slot % kNS;
    if (n >= z.N) return;
    float v = 0.f;
    for (int k = 0; k < z.tiles; ++k) v += __ldcs(f.bc + (rl * z.tiles + k) * per_row + r);
    const size_t o = (static_cast<size_t>(z.row0 + rl) * z.L + t) * z.N + n;
    (slot < kNS ? f.dC : f.dB)[o] = v;
}

__device__ void finish_params(const Finish& f, const Sizes& z, size_t i) {
    const size_t a_elems = static_cast<size_t>(z.D) * z.N;
    const float* part = i < a_elems ? f.dA_part + i : f.dskip_part + (i - a_elems);
    const size_t stride = i < a_elems ? a_elems : static_cast<size_t>(z.D);
    if (i >= a_elems + z.D) return;
    float v = 0.f;
#pragma unroll 8
    for (int p = 0; p < f.parts; ++p) v += __ldcs(part + p * stride);
    (i < a_elems ? f.dA + i : f.dskip + (i - a_elems))[0] = v;
}

__global__ void finish(Finish f, Sizes z) {
    if (blockIdx.x < f.bc_blocks)
        finish_bc(f, z, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x);
    else
        finish_params(f, z, static_cast<size_t>(blockIdx.x - f.bc_blocks) * blockDim.x + threadIdx.x);
}

float* g_scratch = nullptr;
size_t g_scratch_floats = 0;

// Grown on demand, kept between calls; contents are never reused.
float* scratch(size_t floats) {
    if (floats > g_scratch_floats) {
        if (g_scratch) cudaFree(g_scratch);
        if (cudaMalloc(&g_scratch, floats * sizeof(float)) != cudaSuccess) {
            g_scratch = nullptr;
            g_scratch_floats = 0;
            return nullptr;
        }
        g_scratch_floats = floats;
    }
    return g_scratch;
}

int sm_count() {
    static int sms = 0;
    if (sms == 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) sms = 1;
    }
    return sms;
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B, const float* C,
                      const float* skip, const float* dy, float* du, float* ddelta, float* dA, float* dB,
                      float* dC, float* dskip, int batch, int seq_len, int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    const int L = seq_len, D = d_model, N = d_state;
    const int tiles = (D + kChannels - 1) / kChannels, nseg = (L + kSeg - 1) / kSeg;
    // per batch row: checkpoints, their delta sums and the dB/dC partials
    const size_t per_row = static_cast<size_t>(tiles) * (static_cast<size_t>(nseg) * (kCkpt + kChannels) + 32 * L);
    int rows = static_cast<int>(kScratchCap / sizeof(float) / per_row);
    rows = rows < 1 ? 1 : rows > batch ? batch : rows;
    // pieces of time: as many as give every SM one block of a row group
    int pieces = sm_count() / (rows * tiles);
    pieces = pieces < 1 ? 1 : pieces > nseg ? nseg : pieces;
    const int spp = (nseg + pieces - 1) / pieces;
    pieces = (nseg + spp - 1) / spp;
    const size_t summaries = static_cast<size_t>(rows) * tiles * pieces * kSummary;
    const size_t params = static_cast<size_t>(pieces) * batch * D * (N + 1);
    float* sc = scratch(rows * per_row + summaries + params);
    if (!sc) return;  // out of memory: the outputs stay unwritten, the check says so
    Scratch s;
    s.ckpt = sc;
    s.dcum = s.ckpt + static_cast<size_t>(rows) * tiles * nseg * kCkpt;
    s.bc = s.dcum + static_cast<size_t>(rows) * tiles * nseg * kChannels;
    s.summary = s.bc + static_cast<size_t>(rows) * tiles * 32 * L;
    s.dA_part = s.summary + summaries;
    s.dskip_part = s.dA_part + static_cast<size_t>(pieces) * batch * D * N;

    static bool attr_set = false;
    if (!attr_set) {
        cudaFuncSetAttribute(forward_pieces, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemA));
        cudaFuncSetAttribute(gradients, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemB));
        attr_set = true;
    }
    const Inputs in{u, delta, A, B, C, skip, dy};
    for (int r0 = 0; r0 < batch; r0 += rows) {
        const int nr = batch - r0 < rows ? batch - r0 : rows;
        for (int n0 = 0; n0 < N; n0 += kNS) {
            const Sizes z{L, D, N, n0, tiles, nseg, pieces, spp, r0, batch, D % 4 == 0, N % 4 == 0};
            const dim3 grid(nr * tiles, pieces);
            forward_pieces<<<grid, kThreads, kSmemA>>>(in, z, s);
            gradients<<<grid, kThreads, kSmemB>>>(in, z, s, du, ddelta);
            const size_t outs = static_cast<size_t>(nr) * L * 32;
            const bool last = r0 + nr >= batch && n0 + kNS >= N;
            const Finish f{s.bc, s.dA_part, s.dskip_part, dB, dC, dA, dskip, nr, pieces * batch,
                           static_cast<unsigned>((outs + 255) / 256)};
            const size_t params = last ? static_cast<size_t>(D) * N + D : 0;
            finish<<<f.bc_blocks + static_cast<unsigned>((params + 255) / 256), 256>>>(f, z);
        }
    }
}
