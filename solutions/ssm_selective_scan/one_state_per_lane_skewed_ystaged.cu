// ssm_selective_scan: one_state_per_lane_skewed.cu with y staged through
// shared memory and written a tile at a time. A candidate to replace
// reference/ssm_selective_scan.cu; reference/ssm_selective_scan.md gives its
// prediction and, once measured, its H200 times.
//
// Why: after the sum over a channel's lanes each lane holds the y of one step,
// so a warp's store of y covers 16 steps x 2 channels: 16 rows of y, 8 bytes
// in each. The L1 handles a store one 128-byte line per cycle, so those
// stores take about one cycle of the SM's load/store path per 32 state
// updates, as much as the B and C loads, on the path that shared loads and
// shuffles also use. Here a lane writes its y to a ring of 3 tiles of rows
// [step][channel] in shared memory (one 4-byte store, 2 wavefronts), and at the
// start of tile k the block stores tile k-2's rows: each warp store covers 2
// rows x 16 channels, 64 contiguous bytes each, the fewest lines y can take.
// Tile k-2's y is complete by then: the last of it (the late lanes' final
// 8 steps) is summed during tile k-1, before the barrier that ends it, and the
// ring's third slot keeps tile k's and k-1's writes off the rows being read.
//
// Everything else is one_state_per_lane_skewed.cu's.

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

// Exchanges 2-4 of the sum over a channel's lanes: q[0..7] (one value per
// step) over the 8 lanes of the same skew, scattered: lane bits 0-2 = j get
// step j of q.
__device__ __forceinline__ float reduce_scatter8(const float (&q)[8], int lane) {
    float r[4], s[2], t[1];
    exchange<4>(q, r, lane);
    exchange<2>(r, s, lane);
    exchange<1>(s, t, lane);
    return t[0];
}

constexpr int kSkew = kLanes / 2;  // steps the late lanes run behind

template <int NS, int T>
struct Tile {
    static constexpr int S = NS / kLanes;  // states per lane
    static constexpr int ROWS = 3 * kChannels + 2 * NS;  // delta, delta*u, skip*u per channel; B, C per state
    static constexpr int W = T + kSkew;     // steps in a buffer: the tile's and the 8 before it
    static constexpr int P = W + 4;         // row pitch
    static constexpr int FLOATS = ROWS * P;
    static constexpr int YP = kChannels + 1;  // y ring pitch: a warp's 16 steps x 2 channels hit 31 banks
    static constexpr int Y_FLOATS = 3 * T * YP;
    static constexpr int DU_ITEMS = kChannels * T / kThreads;  // per loading thread
    static constexpr int BC_ITEMS = NS * T / kThreads;
    static_assert(kThreads % kChannels == 0 && kThreads % NS == 0, "a loading thread keeps one row");
    static_assert(T % 32 == 0, "whole 16-step groups");
    static_assert((P / 4) % 2 == 1, "an odd number of 16-byte quads per row: 8 rows' 16-byte reads hit 8 distinct bank quads");
    static constexpr bool VEC_OK = DU_ITEMS % 4 == 0 && BC_ITEMS % 4 == 0;  // whole float4s per loading thread
};

template <int NS, int T, bool VEC>
__global__ void __launch_bounds__(kThreads, 1)
scan(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
     const float* __restrict__ Bm, const float* __restrict__ Cm, const float* __restrict__ skip,
     float* __restrict__ y, int L, int D, int N, int tiles_d) {
    using K = Tile<NS, T>;
    constexpr int S = K::S, P = K::P;
    static_assert(!VEC || K::VEC_OK, "whole float4s per loading thread");
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    float* const ring = smem + 2 * K::FLOATS;  // y of 3 tiles, rows [step % 3T][channel]
    constexpr int Y_RING = 3 * T;

    const int tid = threadIdx.x;
    const int b = blockIdx.x / tiles_d, d0 = (blockIdx.x % tiles_d) * kChannels;
    const size_t row0 = static_cast<size_t>(b) * L;

    // Staging role, as in one_state_per_lane.cu; a buffer's column c holds step
    // t0 - 8 + c, and a tile's own steps go to columns 8 .. T+7.
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
        float* sd = buf + kSkew;
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
    // The 8 steps before a tile: zeros before step 0, else the last 8 columns
    // of the previous tile's buffer. Two float4s per row.
    auto carry_over = [&](float* dst, const float* src) {
        for (int i = tid; i < 2 * K::ROWS; i += kThreads) {
            const int row = i / 2, c = 4 * (i % 2);
            const float4 v = src ? *reinterpret_cast<const float4*>(src + row * P + T + c)
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
            *reinterpret_cast<float4*>(dst + row * P + c) = v;
        }
    };

    // y of tile j (complete, behind a barrier) from its ring slot to memory:
    // thread tid takes channel tid % 16 of steps tid / 16 + 16i.
    auto write_y = [&](int j) {
        const int c = tid % kChannels, r = tid / kChannels;
        if (d0 + c >= D) return;
        const float* src = ring + ((j % 3) * T + r) * K::YP + c;
        float* dst = y + (row0 + static_cast<size_t>(j) * T + r) * D + d0 + c;
        const size_t dst_step = static_cast<size_t>(kThreads / kChannels) * D;
#pragma unroll 1  // unrolled, it pushes the 64-state kernel past 255 registers
        for (int i = 0; i < T / (kThreads / kChannels); ++i) {
            if (j * T + r + i * (kThreads / kChannels) < L) __stcs(dst + i * dst_step, src[i * (kThreads / kChannels) * K::YP]);
        }
    };

    // Scanning role: lane bit 4 picks the channel, bits 0-3 the state lane k;
    // the lane holds states k, k+16, ... (S of them). Late lanes (k >= 8) scan
    // step i - 8 at iteration i.
    const int warp = tid / 32, lane = tid % 32;
    const int ch = warp * kChannelsPerWarp + (lane >> 4);
    const int k = lane & (kLanes - 1);
    const bool late = k >= kSkew;
    const bool ch_ok = d0 + ch < D;
    float a2[S], h[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
        const int n = k + kLanes * s;
        a2[s] = (ch_ok && n < N) ? A[static_cast<size_t>(d0 + ch) * N + n] * kLog2e : 0.f;
        h[s] = 0.f;
    }
    // Column of iteration 0 of a tile in its buffer, and the column of the step
    // whose y this lane holds after a group's sum, relative to 16g: a lower
    // lane sums steps 16g .. 16g+7 of its group, a late lane steps 16g-8 ..
    // 16g-1 (the previous group's upper half).
    const int col0 = late ? 0 : kSkew;
    const int ycol = kSkew + k - (late ? kLanes : 0);
    // y offset of this lane's step at group 0 of tile 0 (negative for late lanes
    // of batch row 0: their first group stores nothing); a group moves it by 16 rows.
    // Ring row of this lane's step at group 0 of tile 0 (step k - 16 for late
    // lanes: their first group stores nothing); a group moves it by 16.
    int yrow = (ycol - kSkew + Y_RING) % Y_RING;

    // The group whose exchanges are still to run (none before the first):
    // kept slots 0-7 (for one state C and h, for more the lane's sum of C*h),
    // sent slots 8-15, and the values received in the previous group's first
    // exchange.
    float keep_c[kSkew] = {}, keep_h[kSkew] = {}, keep_p[kSkew] = {}, send[kSkew] = {}, recv_prev[kSkew] = {};
    float ssu_pp = 0.f;
    int yrow_pp = 0;
    bool ok_pp = false;

    // The pending group's four exchanges, then its y.
    auto finish_group = [&]() {
        float q[kSkew];
#pragma unroll
        for (int i = 0; i < kSkew; ++i) {
            const float got = __shfl_xor_sync(kFull, send[i], kSkew);
            const float other = late ? recv_prev[i] : got;
            if constexpr (S == 1) q[i] = fmaf(keep_c[i], keep_h[i], other);
            else q[i] = keep_p[i] + other;
            recv_prev[i] = got;
        }
        const float yv = reduce_scatter8(q, lane) + ssu_pp;
        if (ok_pp) ring[yrow_pp * K::YP + ch] = yv;
    };

    const int tiles_t = (L + kSkew + T - 1) / T;  // late lanes scan 8 iterations past the end
    carry_over(smem, nullptr);
    load(0);
    store(smem);
    __syncthreads();
    for (int kt = 0; kt < tiles_t; ++kt) {
        const int t0 = kt * T;
        if (kt + 1 < tiles_t) load(t0 + T);  // in flight during the scan below
        if (kt >= 2) write_y(kt - 2);
        float* buf = smem + (kt & 1) * K::FLOATS;
        const float* sd = buf + ch * P + col0;
        const float* sdu = buf + (kChannels + ch) * P + col0;
        const float* ssu = buf + (2 * kChannels + ch) * P;
        const float* sb = buf + (3 * kChannels + k) * P + col0;
        const float* sc = sb + NS * P;
        const int first_step = t0 + ycol - kSkew;  // of this lane's y at group 0 of the tile
#pragma unroll
        for (int g = 0; g < T / kLanes; ++g) {
            float c_now[kSkew] = {}, h_now[kSkew] = {}, p_now[kSkew] = {}, send_now[kSkew];
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
                    const int slot = 4 * quad + j;
                    const float dt = at(dv, j), du = at(duv, j);
                    float acc = 0.f;
#pragma unroll
                    for (int s = 0; s < S; ++s) {
                        h[s] = fmaf(ex2(dt * a2[s]), h[s], du * at(bv[s], j));
                        if (s + 1 < S) acc = s == 0 ? at(cv[s], j) * h[s] : fmaf(at(cv[s], j), h[s], acc);
                    }
                    const float c_last = at(cv[S - 1], j);
                    if (slot < kSkew) {  // kept: for one state, C*h is added to the partner's part in the exchange
                        if constexpr (S == 1) {
                            c_now[slot] = c_last;
                            h_now[slot] = h[0];
                        } else {
                            p_now[slot] = fmaf(c_last, h[S - 1], acc);
                        }
                    } else {
                        send_now[slot - kSkew] = S == 1 ? c_last * h[S - 1] : fmaf(c_last, h[S - 1], acc);
                    }
                }
            }
            // The previous group's sum: its shuffles run beside this group's scan.
            finish_group();
#pragma unroll
            for (int i = 0; i < kSkew; ++i) {
                keep_c[i] = c_now[i];
                keep_h[i] = h_now[i];
                keep_p[i] = p_now[i];
                send[i] = send_now[i];
            }
            ssu_pp = ssu[kLanes * g + ycol];
            const int step = first_step + kLanes * g;
            ok_pp = ch_ok && step >= 0 && step < L;
            yrow_pp = yrow;
            yrow = yrow + kLanes < Y_RING ? yrow + kLanes : yrow + kLanes - Y_RING;
        }
        // The other buffer was last read by the scan of tile kt-1, before the previous barrier.
        if (kt + 1 < tiles_t) {
            float* next = smem + ((kt + 1) & 1) * K::FLOATS;
            store(next);
            carry_over(next, buf);
        }
        __syncthreads();
    }
    finish_group();
    __syncthreads();
    for (int j = tiles_t >= 2 ? tiles_t - 2 : 0; j < tiles_t; ++j) write_y(j);
}

template <int NS, int T, bool VEC>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C,
            const float* skip, float* y, int batch, int L, int D, int N) {
    using K = Tile<NS, T>;
    const size_t smem = sizeof(float) * (2 * K::FLOATS + K::Y_FLOATS);
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
    if constexpr (Tile<NS, T>::VEC_OK) {
        if (D % 4 == 0 && N == NS && addr % 16 == 0) return launch<NS, T, true>(u, delta, A, B, C, skip, y, batch, L, D, N);
    }
    launch<NS, T, false>(u, delta, A, B, C, skip, y, batch, L, D, N);
}

}  // namespace

extern "C" void solve(const float* u, const float* delta, const float* A, const float* B,
                      const float* C, const float* skip, float* y, int batch, int seq_len,
                      int d_model, int d_state) {
    if (batch <= 0 || seq_len <= 0 || d_model <= 0 || d_state <= 0) return;
    if (d_state <= 16) run<16, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    else if (d_state <= 32) run<32, 64>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
    // 64 states: tiles of 32 steps keep the kernel within 255 registers (single-float staging)
    else run<64, 32>(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state);
}
