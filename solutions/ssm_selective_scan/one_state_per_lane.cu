// ssm_selective_scan: one pass over time, every exponential computed once, one
// state per lane: a channel's 16 states over 16 lanes, two channels per warp.
// A candidate to replace reference/ssm_selective_scan.cu (2 states per lane);
// reference/ssm_selective_scan.md gives its prediction and, once measured, its
// H200 times.
//
// Why one state per lane: the single pass has batch * d_model * d_state = 32768
// recurrences. Two per lane make 512 warps, one per SM sub-partition, and the
// floor probe (reference/ssm_selective_scan_floor.cu) runs that shape's
// arithmetic in 47.1 us: one warp cannot keep MUFU busy between its own
// dependent instructions. One per lane makes 1024 warps, two per
// sub-partition, where the same arithmetic takes 38.6 us. The price is the sum
// over states: 16 lanes instead of 8 per channel, no in-lane partial sum.
//
// A block = 16 channels of one batch row, 8 warps; a warp = 2 channels x 16
// lanes (lane bit 4 the channel, bits 0-3 the state lane k). At the official
// size that is 128 blocks of 256 threads, one per SM. Time goes in tiles of T
// steps, staged as in the reference: delta, u, B and C of tile k+1 are loaded
// into registers while tile k is scanned, then written to the other shared
// buffer as rows [channel or state][step], with delta*u and skip*u formed once
// per (t, d); one barrier per tile.
//
// Scan, per step and state: a = ex2(delta * A*log2(e)), h = a*h + (delta*u)*B,
// p = C*h. A lane reads 4 steps of a row with one 16-byte shared load; the 16
// lanes of a channel load the same delta and delta*u words (a broadcast) and
// the two channels of a warp the same B and C words, so a warp's 4 loads per 4
// steps need 6 wavefronts.
//
// y: the 16 lanes' p of 16 steps are summed by a shuffle reduce-scatter (4
// exchanges of 8, 4, 2, 1 values), after which lane k holds step k's y. A
// group's reduce-scatter runs while the next group is scanned, so the
// shuffles' latency overlaps the exponentials.
//
// Every size takes the same code: d_state is padded to 16, 32 or 64 (1, 2 or 4
// states per lane) with zero B and C, so padded states stay 0; ragged channels
// and steps load delta = 0 (a = 1, no input) and are not stored.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kLanes = 16;                        // lanes per channel
constexpr int kChannelsPerWarp = 32 / kLanes;
constexpr int kChannels = kWarps * kChannelsPerWarp;  // per block
constexpr unsigned kFull = 0xffffffffu;

// 2^x on MUFU as one instruction: exp2f and __expf compile to ex2.approx.f32
// without .ftz under -O3, which adds a range test and two multiplies.
__device__ __forceinline__ float ex2(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float at(const float4& v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// One staging item, or zeros where ok is false: a float4 (VEC) or a float.
// STREAM: u and delta are read once (evict first); B and C are shared by the
// block's channels and take the read-only path.
template <bool VEC, bool STREAM>
__device__ __forceinline__ auto load_item(const float* p, bool ok) {
    if constexpr (VEC) {
        const float4* q = reinterpret_cast<const float4*>(p);
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (STREAM) return ok ? __ldcs(q) : zero;
        else return ok ? __ldg(q) : zero;
    } else {
        if constexpr (STREAM) return ok ? __ldcs(p) : 0.f;
        else return ok ? __ldg(p) : 0.f;
    }
}

// One exchange of a reduce-scatter: p[0..2H) over lanes that differ in lane bit
// H; the lane with that bit clear keeps steps [0, H), the other [H, 2H).
template <int H>
__device__ __forceinline__ void exchange(const float* p, float* q, int lane) {
    const bool upper = lane & H;
#pragma unroll
    for (int i = 0; i < H; ++i) {
        const float send = upper ? p[i] : p[i + H], keep = upper ? p[i + H] : p[i];
        q[i] = keep + __shfl_xor_sync(kFull, send, H);
    }
}

// Sum over the 16 lanes of a channel of p[0..15] (one value per step),
// scattered: state lane k (lane bits 0-3) gets step k.
__device__ __forceinline__ float reduce_scatter16(const float (&p)[16], int lane) {
    float q[8], r[4], s[2], t[1];
    exchange<8>(p, q, lane);
    exchange<4>(q, r, lane);
    exchange<2>(r, s, lane);
    exchange<1>(s, t, lane);
    return t[0];
}

template <int NS, int T>
struct Tile {
    static constexpr int S = NS / kLanes;  // states per lane
    static constexpr int P = T + 4;        // row pitch: 8 rows' 16-byte reads hit 8 distinct bank quads
    // one buffer: delta, delta*u, skip*u rows per channel, then B, C rows per state
    static constexpr int FLOATS = (3 * kChannels + 2 * NS) * P;
    static constexpr int DU_ITEMS = kChannels * T / kThreads;  // per loading thread
    static constexpr int BC_ITEMS = NS * T / kThreads;
    static_assert(kThreads % kChannels == 0 && kThreads % NS == 0, "a loading thread keeps one row");
    static_assert(T % 32 == 0, "T % 32 == 0 keeps P % 32 == 4 and whole 16-step groups");
    static_assert(DU_ITEMS % 4 == 0 && BC_ITEMS % 4 == 0, "whole float4s per loading thread");
};

template <int NS, int T, bool VEC>
__global__ void __launch_bounds__(kThreads, 1)
scan(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
     const float* __restrict__ Bm, const float* __restrict__ Cm, const float* __restrict__ skip,
     float* __restrict__ y, int L, int D, int N, int tiles_d) {
    using K = Tile<NS, T>;
    constexpr int S = K::S, P = K::P;
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);

    const int tid = threadIdx.x;
    const int b = blockIdx.x / tiles_d, d0 = (blockIdx.x % tiles_d) * kChannels;
    const size_t row0 = static_cast<size_t>(b) * L;

    // Staging role. VEC (d_model % 4 == 0, d_state == NS, 16-byte aligned
    // arrays): a thread loads float4s of 4 channels (4 states) at steps
    // lt + k*stride; otherwise single floats of channel lc (state ls).
    constexpr int CW = VEC ? 4 : 1;                        // floats per load
    constexpr int DU_ITEMS = K::DU_ITEMS / CW, BC_ITEMS = K::BC_ITEMS / CW;
    constexpr int DU_STRIDE = kThreads / (kChannels / CW), BC_STRIDE = kThreads / (NS / CW);
    const int lc = CW * (tid % (kChannels / CW)), lt = tid / (kChannels / CW);
    const int ls = CW * (tid % (NS / CW)), lts = tid / (NS / CW);
    const bool lc_ok = d0 + lc < D, ls_ok = ls < N;
    float lskip[CW];
#pragma unroll
    for (int j = 0; j < CW; ++j) lskip[j] = d0 + lc + j < D ? skip[d0 + lc + j] : 0.f;
    using Item = typename std::conditional<VEC, float4, float>::type;
    Item rd[DU_ITEMS], ru[DU_ITEMS], rb[BC_ITEMS], rc[BC_ITEMS];
    // this thread's first element of each array; a tile moves them by T rows
    const float* pd = delta + (row0 + lt) * D + d0 + lc;
    const float* pu = u + (row0 + lt) * D + d0 + lc;
    const float* pb = Bm + (row0 + lts) * N + ls;
    const float* pc = Cm + (row0 + lts) * N + ls;
    const size_t du_step = static_cast<size_t>(DU_STRIDE) * D, bc_step = static_cast<size_t>(BC_STRIDE) * N;
    auto load = [&](int t0) {
#pragma unroll
        for (int k = 0; k < DU_ITEMS; ++k) {
            const bool ok = lc_ok && t0 + lt + k * DU_STRIDE < L;
            const size_t off = static_cast<size_t>(t0) * D + k * du_step;
            rd[k] = load_item<VEC, true>(pd + off, ok);
            ru[k] = load_item<VEC, true>(pu + off, ok);
        }
#pragma unroll
        for (int k = 0; k < BC_ITEMS; ++k) {
            const bool ok = ls_ok && t0 + lts + k * BC_STRIDE < L;
            const size_t off = static_cast<size_t>(t0) * N + k * bc_step;
            rb[k] = load_item<VEC, false>(pb + off, ok);
            rc[k] = load_item<VEC, false>(pc + off, ok);
        }
    };
    auto part = [](const Item& v, int j) {
        if constexpr (VEC) return at(v, j);
        else return v;
    };
    auto store = [&](float* buf) {
        float* sd = buf;
        float* sdu = sd + kChannels * P;
        float* ssu = sdu + kChannels * P;
        float* sb = ssu + kChannels * P;
        float* sc = sb + NS * P;
#pragma unroll
        for (int k = 0; k < DU_ITEMS; ++k) {
            const int t = lt + k * DU_STRIDE;
#pragma unroll
            for (int j = 0; j < CW; ++j) {
                const float dv = part(rd[k], j), uv = part(ru[k], j);
                sd[(lc + j) * P + t] = dv;
                sdu[(lc + j) * P + t] = dv * uv;
                ssu[(lc + j) * P + t] = lskip[j] * uv;
            }
        }
#pragma unroll
        for (int k = 0; k < BC_ITEMS; ++k) {
            const int t = lts + k * BC_STRIDE;
#pragma unroll
            for (int j = 0; j < CW; ++j) {
                sb[(ls + j) * P + t] = part(rb[k], j);
                sc[(ls + j) * P + t] = part(rc[k], j);
            }
        }
    };

    // Scanning role: lane bit 4 picks the channel, bits 0-3 the state lane k;
    // the lane holds states k, k+16, ... (S of them).
    const int warp = tid / 32, lane = tid % 32;
    const int ch = warp * kChannelsPerWarp + (lane >> 4);
    const int k = lane & (kLanes - 1);
    const bool ch_ok = d0 + ch < D;
    float a2[S], h[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
        const int n = k + kLanes * s;
        a2[s] = (ch_ok && n < N) ? A[static_cast<size_t>(d0 + ch) * N + n] * kLog2e : 0.f;
        h[s] = 0.f;
    }

    // This lane's y at step k of the current tile; a group of 16 steps moves it by 16 rows.
    float* yl = y + (row0 + k) * D + d0 + ch;
    const size_t y_rows16 = static_cast<size_t>(kLanes) * D;

    // The group whose y is still to be summed and stored (none before the first).
    float pp[kLanes] = {}, ssu_pp = 0.f;
    float* y_pp = yl;
    bool ok_pp = false;

    const int tiles_t = (L + T - 1) / T;
    load(0);
    store(smem);
    __syncthreads();
    for (int kt = 0; kt < tiles_t; ++kt) {
        const int t0 = kt * T;
        if (kt + 1 < tiles_t) load(t0 + T);  // in flight during the scan below
        const float* buf = smem + (kt & 1) * K::FLOATS;
        const float* sd = buf + ch * P;
        const float* sdu = buf + (kChannels + ch) * P;
        const float* ssu = buf + (2 * kChannels + ch) * P;
        const float* sb = buf + (3 * kChannels + k) * P;
        const float* sc = sb + NS * P;
        const int steps_left = ch_ok ? L - t0 - k : 0;  // this lane stores group g if 16g < steps_left
#pragma unroll
        for (int g = 0; g < T / kLanes; ++g) {
            float p[kLanes];  // this lane's part of y at steps 16g .. 16g+15
#pragma unroll
            for (int quad = 0; quad < kLanes / 4; ++quad) {
                const int o = kLanes * g + 4 * quad;
                const float4 dv = *reinterpret_cast<const float4*>(sd + o);
                const float4 duv = *reinterpret_cast<const float4*>(sdu + o);
                float4 bv[S], cv[S];
#pragma unroll
                for (int s = 0; s < S; ++s) {
                    bv[s] = *reinterpret_cast<const float4*>(sb + s * kLanes * P + o);
                    cv[s] = *reinterpret_cast<const float4*>(sc + s * kLanes * P + o);
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float dt = at(dv, j), du = at(duv, j);
                    float acc = 0.f;
#pragma unroll
                    for (int s = 0; s < S; ++s) {
                        h[s] = fmaf(ex2(dt * a2[s]), h[s], du * at(bv[s], j));
                        acc = s == 0 ? at(cv[s], j) * h[s] : fmaf(at(cv[s], j), h[s], acc);
                    }
                    p[4 * quad + j] = acc;
                }
            }
            // The previous group's y: its shuffles run beside this group's scan.
            const float yv = reduce_scatter16(pp, lane) + ssu_pp;
            if (ok_pp) __stcs(y_pp, yv);
#pragma unroll
            for (int j = 0; j < kLanes; ++j) pp[j] = p[j];
            ssu_pp = ssu[kLanes * g + k];
            ok_pp = kLanes * g < steps_left;
            y_pp = yl;
            yl += y_rows16;
        }
        // The other buffer was last read by the scan of tile kt-1, before the previous barrier.
        if (kt + 1 < tiles_t) store(smem + ((kt + 1) & 1) * K::FLOATS);
        __syncthreads();
    }
    const float yv = reduce_scatter16(pp, lane) + ssu_pp;
    if (ok_pp) __stcs(y_pp, yv);
}

template <int NS, int T, bool VEC>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    using K = Tile<NS, T>;
    const size_t smem = sizeof(float) * 2 * K::FLOATS;
    static bool attr_set = false;  // once per instantiation: 32 and 64 states need over 48 KB
    if (!attr_set) {
        cudaFuncSetAttribute(scan<NS, T, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        attr_set = true;
    }
    const int tiles_d = (D + kChannels - 1) / kChannels;
    scan<NS, T, VEC><<<batch * tiles_d, kThreads, smem>>>(u, delta, A, B, C, skip, y, L, D, N, tiles_d);
}

template <int NS, int T>
void run(const float* u, const float* delta, const float* A, const float* B, const float* C,
         const float* skip, float* y, int batch, int L, int D, int N) {
    const auto addr = reinterpret_cast<uintptr_t>(u) | reinterpret_cast<uintptr_t>(delta) |
                      reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C);
    if (D % 4 == 0 && N == NS && addr % 16 == 0)
        launch<NS, T, true>(u, delta, A, B, C, skip, y, batch, L, D, N);
    else
        launch<NS, T, false>(u, delta, A, B, C, skip, y, batch, L, D, N);
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B,
                      const float* C, const float* skip, float* y, int batch, int seq_len,
                      int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    // 64 states: 96 KB of shared memory, one block per SM as at every size
    if (d_state <= 16) run<16, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 32) run<32, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else run<64, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
