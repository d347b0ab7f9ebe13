// ssm_selective_scan reference: one pass over time, every exponential computed
// once, a channel's states spread over 8 lanes. H200, (4, 4096, 512, 16):
// 89-93 us (reference/ssm_selective_scan.md has the measurements and what bounds
// it; reference/ssm_selective_scan_floor.cu measures the arithmetic alone).
//
// Why one pass: 134 M exponentials are the costliest work (about 32 us if all go
// through the MUFU unit at full rate), and a chunked scan computes each about
// twice (solutions/ssm_selective_scan/chunked_states_in_registers.cu). One pass
// has only batch * d_model * d_state = 32768 independent recurrences, so each
// lane takes d_state/8 states of one channel (2 for d_state 16): 512 warps, one
// per SM sub-partition.
//
// A block = 16 channels of one batch row, 4 warps; a warp = 4 channels x 8 lanes.
// It walks time in tiles of T steps:
//  * staging: delta, u, B and C of tile k+1 are loaded into registers while tile
//    k is scanned (16-byte loads of 4 channels or 4 states where d_model % 4 == 0,
//    d_state fills its padding and the arrays are 16-byte aligned), then written
//    to the other shared buffer as rows [channel or state][step], with delta*u
//    and skip*u formed once per (t, d). One barrier per tile.
//  * scan: per step and state, a = ex2(delta * A*log2(e)) (log2(e) folded into
//    A), h = a*h + (delta*u)*B, partial y += C*h. A lane reads 4 steps of each
//    row with one 16-byte shared load.
//  * y: the 8 lanes' partial sums of 8 steps are combined by a shuffle
//    reduce-scatter (3 exchanges), after which each lane holds one step's y.
//    A group's reduce-scatter runs while the next group is scanned, so the
//    shuffles' latency overlaps the exponentials (the last group's, across the
//    tile's barrier).
//
// Shared memory returns one register per lane and clock to the whole SM, and
// every lane needs delta, delta*u, B and C each step. The lane layout halves
// that: lanes l and l^2 share a channel and lanes l and l^1 share a state row,
// so each 16-byte load returns two lanes' registers per slot.
//
// Accuracy: the decays chain over the whole sequence in float32, as in the
// float32 formula; with the hardware ex2 the error stays 4x or more inside the
// tolerance at seq_len 8192 (the notes give the measured errors).
//
// Every size takes the same code: d_state is padded to 8, 16, 32 or 64 with zero
// B and C (padded states stay 0), and ragged channels and steps load delta = 0
// (a = 1, no input) and are not stored.
//
// Compile-time switch (the notes measure it):
//   TILE16 [64]       steps per tile for d_state <= 16 (a multiple of 32).

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kLanes = 8;                         // lanes per channel
constexpr int kChannelsPerWarp = 32 / kLanes;
constexpr int kChannels = kWarps * kChannelsPerWarp;  // per block

#ifndef TILE16
#define TILE16 64
#endif

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

// Sum over the 8 lanes of a channel of p[0..7] (one value per step), scattered:
// the lane with state lane ln gets step ln. Lane bits 4, 3, 1 are ln's bits 2, 1, 0.
__device__ __forceinline__ float reduce_scatter8(const float (&p)[8], int lane) {
    constexpr unsigned kFull = 0xffffffffu;
    const bool b4 = lane & 16, b3 = lane & 8, b1 = lane & 2;
    float q[4], r[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float send = b4 ? p[i] : p[i + 4], keep = b4 ? p[i + 4] : p[i];
        q[i] = keep + __shfl_xor_sync(kFull, send, 16);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const float send = b3 ? q[i] : q[i + 2], keep = b3 ? q[i + 2] : q[i];
        r[i] = keep + __shfl_xor_sync(kFull, send, 8);
    }
    const float send = b1 ? r[0] : r[1], keep = b1 ? r[1] : r[0];
    return keep + __shfl_xor_sync(kFull, send, 2);
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
    static_assert(T % 32 == 0, "T % 32 == 0 keeps P % 32 == 4 and whole 8-step groups");
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

    // Staging role. VEC (d_model % 4 == 0, d_state a power of two >= 8, 16-byte
    // aligned arrays): a thread loads float4s of 4 channels (4 states) at steps
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

    // Scanning role: lane bits 0 and 2 pick the channel, bits 1, 3 and 4 the state lane ln.
    const int warp = tid / 32, lane = tid % 32;
    const int cw = (lane & 1) | ((lane >> 1) & 2);
    const int ch = warp * kChannelsPerWarp + cw;
    const int ln = ((lane >> 1) & 1) | ((lane >> 2) & 6);
    const bool ch_ok = d0 + ch < D;
    float a2[S], h[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
        const int n = ln + kLanes * s;
        a2[s] = (ch_ok && n < N) ? A[static_cast<size_t>(d0 + ch) * N + n] * kLog2e : 0.f;
        h[s] = 0.f;
    }

    // This lane's y at step ln of the current tile; a group of 8 steps moves it by 8 rows.
    float* yl = y + (row0 + ln) * D + d0 + ch;
    const size_t y_rows8 = static_cast<size_t>(8) * D;

    // The group whose y is still to be summed and stored (none before the first).
    float pp[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, ssu_pp = 0.f;
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
        const float* sb = buf + (3 * kChannels + ln) * P;
        const float* sc = sb + NS * P;
        const int steps_left = ch_ok ? L - t0 - ln : 0;  // this lane stores group g if 8g < steps_left
#pragma unroll
        for (int g = 0; g < T / 8; ++g) {
            float p[8];  // this lane's part of y at steps 8g .. 8g+7
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int o = 8 * g + 4 * half;
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
                        acc = fmaf(at(cv[s], j), h[s], acc);
                    }
                    p[4 * half + j] = acc;
                }
            }
            // The previous group's y: its shuffles run beside this group's scan.
            const float yv = reduce_scatter8(pp, lane) + ssu_pp;
            if (ok_pp) __stcs(y_pp, yv);
#pragma unroll
            for (int j = 0; j < 8; ++j) pp[j] = p[j];
            ssu_pp = ssu[8 * g + ln];
            ok_pp = 8 * g < steps_left;
            y_pp = yl;
            yl += y_rows8;
        }
        // The other buffer was last read by the scan of tile kt-1, before the previous barrier.
        if (kt + 1 < tiles_t) store(smem + ((kt + 1) & 1) * K::FLOATS);
        __syncthreads();
    }
    const float yv = reduce_scatter8(pp, lane) + ssu_pp;
    if (ok_pp) __stcs(y_pp, yv);
}

template <int NS, int T, bool VEC>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    using K = Tile<NS, T>;
    const size_t smem = sizeof(float) * 2 * K::FLOATS;
    static bool attr_set = false;  // once per instantiation: d_state 64 needs over 48 KB
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
    // tiles of 32 steps above 16 states keep the staging registers and shared memory in bounds
    if (d_state <= 8) run<8, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 16) run<16, TILE16>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 32) run<32, 32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else run<64, 32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
