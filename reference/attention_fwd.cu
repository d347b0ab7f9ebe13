// attention_fwd reference: causal O = softmax(Q K^T / sqrt(d)) V, half inputs
// and output, float32 scores, softmax statistics and accumulators.
// FlashAttention-2 forward with Ampere-style tensor-core code (sm_80+, emu):
//   * a block owns BM = 128 queries of one (batch, head); 8 warps own 16 rows
//     each, so the softmax of a row never leaves its quad of lanes;
//   * keys and values stream through shared memory BN = 64 rows at a time:
//     the load of V_j overlaps S = Q K_j^T and the softmax, the load of
//     K_{j+1} overlaps O += P V_j (cp.async, one buffer each);
//   * S comes from mma.sync m16n8k16 with ldmatrix fragments (Q from shared
//     memory each step, K non-transposed); P is rounded to half in registers
//     and is already the A fragment of the P V product (the accumulator
//     layout of two n8 tiles is the A layout of one k16 step); V goes
//     through ldmatrix.trans;
//   * online softmax in the exp2 domain: m and l per row in float32, O
//     rescaled by exp2(m_old - m_new) when the row maximum grows;
//   * causal: a block reads keys only up to its last query; warps whose rows
//     all precede a key tile skip its math; only tiles crossing the diagonal
//     (or the end of the sequence) are masked; blocks start with the longest
//     rows (the last query blocks) so the short ones fill the tail;
//   * shared tiles are XOR-swizzled by 16-byte chunk so that ldmatrix and the
//     cp.async stores are free of bank conflicts.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

namespace {

#ifndef ATTN_MIN_BLOCKS  // blocks per SM promised to ptxas (2: <= 128 registers)
#define ATTN_MIN_BLOCKS 2
#endif
constexpr int BM = 128, BN = 64, WARPS = 8, THREADS = 32 * WARPS;

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}

// (row, col) of a tile with D halves per row, the 16-byte chunk index XORed with row % 8.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
    return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

// rows [r0, r0 + ROWS) of one (batch, head)'s (seq_len, D) matrix -> a shared tile;
// rows past seq_len become zeros.
template <int D, int ROWS, bool ALIGNED>
__device__ __forceinline__ void load_rows(half* tile, const half* __restrict__ src, int r0, int seq_len) {
    constexpr int CHUNKS = ROWS * D / 8;
    static_assert(CHUNKS % THREADS == 0, "whole chunks per thread");
#pragma unroll
    for (int i = 0; i < CHUNKS / THREADS; i++) {
        int c = threadIdx.x + i * THREADS;
        int row = c / (D / 8), col = (c % (D / 8)) * 8;
        bool in = r0 + row < seq_len;
        half* dst = tile + swz<D>(row, col);
        if (ALIGNED) {
            cp_async_16(dst, in ? src + (size_t)(r0 + row) * D + col : src, in ? 16 : 0);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) dst[j] = in ? src[(size_t)(r0 + row) * D + col + j] : __float2half(0.0f);
        }
    }
}

template <int D, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, ATTN_MIN_BLOCKS)
attention_fwd_kernel(const half* __restrict__ Q, const half* __restrict__ K, const half* __restrict__ V,
                     half* __restrict__ O, int seq_len, float scale_log2) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* sQ = reinterpret_cast<half*>(smem_raw);
    half* sK = sQ + BM * D;
    half* sV = sK + BN * D;

    const int m0 = (gridDim.x - 1 - blockIdx.x) * BM;  // the longest rows first
    const size_t base = (size_t)blockIdx.y * seq_len * D;
    const half* q = Q + base;
    const half* k = K + base;
    const half* v = V + base;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int warp_row0 = m0 + warp * 16;           // this warp's rows: warp_row0 .. +15
    const int row[2] = {warp_row0 + g, warp_row0 + g + 8};  // this lane's rows (accumulator halves)

    load_rows<D, BM, ALIGNED>(sQ, q, m0, seq_len);
    load_rows<D, BN, ALIGNED>(sK, k, 0, seq_len);
    cp_async_commit();

    float acc[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
    float row_max[2] = {-INFINITY, -INFINITY};  // running max of S * scale_log2
    float row_sum[2] = {0.0f, 0.0f};            // this lane's part of the running sum of P

    const int key_end = min(seq_len, m0 + BM);  // causal: no key past the block's last query
    const int tiles = (key_end + BN - 1) / BN;
    for (int j = 0; j < tiles; j++) {
        const int n0 = j * BN;
        cp_async_wait_all();  // K_j (and Q) have landed ...
        __syncthreads();      // ... for all threads, and every warp is done with V_{j-1}
        load_rows<D, BN, ALIGNED>(sV, v, n0, seq_len);
        cp_async_commit();

        const bool active = n0 <= warp_row0 + 15;  // some row of this warp sees some key of the tile
        float s[BN / 8][4];
        if (active) {
#pragma unroll
            for (int jn = 0; jn < BN / 8; jn++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[jn][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D; kk += 16) {
                uint32_t qf[4];
                ldmatrix_x4(qf, sQ + swz<D>(warp * 16 + (lane & 15), kk + (lane >> 4) * 8));
#pragma unroll
                for (int jn = 0; jn < BN / 8; jn += 2) {
                    // matrices: keys jn*8.. at d kk / kk+8, then keys jn*8+8.. at d kk / kk+8
                    uint32_t kf[4];
                    ldmatrix_x4(kf, sK + swz<D>(jn * 8 + (lane & 7) + ((lane >> 4) << 3), kk + ((lane >> 3) & 1) * 8));
                    mma_16816(s[jn], qf, kf[0], kf[1]);
                    mma_16816(s[jn + 1], qf, kf[2], kf[3]);
                }
            }
            // mask keys after the row (causal) and past the sequence; only tiles
            // that reach the diagonal or the end need it
            if (n0 + BN - 1 > warp_row0 || n0 + BN > seq_len) {
#pragma unroll
                for (int jn = 0; jn < BN / 8; jn++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        int key = n0 + jn * 8 + 2 * t + (e & 1);
                        if (key > row[e >> 1] || key >= seq_len) s[jn][e] = -INFINITY;
                    }
            }
            // online softmax, per accumulator half h (rows g and g + 8)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float mx = -INFINITY;
#pragma unroll
                for (int jn = 0; jn < BN / 8; jn++) mx = fmaxf(mx, fmaxf(s[jn][2 * h], s[jn][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                float m_new = fmaxf(row_max[h], mx * scale_log2);
                // a row with no visible key so far keeps m = -inf; 0 keeps exp2 away from inf - inf
                float m_use = m_new == -INFINITY ? 0.0f : m_new;
                float correction = exp2f(row_max[h] - m_use);
                row_max[h] = m_new;
                float sum = 0.0f;
#pragma unroll
                for (int jn = 0; jn < BN / 8; jn++)
#pragma unroll
                    for (int e = 2 * h; e < 2 * h + 2; e++) {
                        float p = exp2f(fmaf(s[jn][e], scale_log2, -m_use));
                        s[jn][e] = p;
                        sum += p;
                    }
                row_sum[h] = row_sum[h] * correction + sum;
#pragma unroll
                for (int dn = 0; dn < D / 8; dn++) {
                    acc[dn][2 * h] *= correction;
                    acc[dn][2 * h + 1] *= correction;
                }
            }
        }

        cp_async_wait_all();  // V_j has landed ...
        __syncthreads();      // ... for all threads, and every warp is done with K_j
        if (j + 1 < tiles) load_rows<D, BN, ALIGNED>(sK, k, n0 + BN, seq_len);
        cp_async_commit();

        if (active) {
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                // P of keys 16kk..16kk+15 as an A fragment: n8 tiles 2kk and 2kk+1
                uint32_t pf[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                  pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                  pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int dn = 0; dn < D / 8; dn += 2) {
                    uint32_t vf[4];
                    ldmatrix_x4_trans(vf, sV + swz<D>(kk * 16 + (lane & 15), dn * 8 + (lane >> 4) * 8));
                    mma_16816(acc[dn], pf, vf[0], vf[1]);
                    mma_16816(acc[dn + 1], pf, vf[2], vf[3]);
                }
            }
        }
    }
    cp_async_wait_all();

    half* o = O + base;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float total = row_sum[h];
        total += __shfl_xor_sync(0xffffffffu, total, 1);
        total += __shfl_xor_sync(0xffffffffu, total, 2);
        if (row[h] >= seq_len) continue;
        float inv = 1.0f / total;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            half* dst = o + (size_t)row[h] * D + dn * 8 + 2 * t;
            if (ALIGNED) {
                *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(acc[dn][2 * h] * inv, acc[dn][2 * h + 1] * inv);
            } else {
                dst[0] = __float2half_rn(acc[dn][2 * h] * inv);
                dst[1] = __float2half_rn(acc[dn][2 * h + 1] * inv);
            }
        }
    }
}

template <int D, bool ALIGNED>
void launch(const half* Q, const half* K, const half* V, half* O, int batch_heads, int seq_len) {
    constexpr size_t smem = (size_t)(BM + 2 * BN) * D * sizeof(half);
    auto kernel = attention_fwd_kernel<D, ALIGNED>;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    float scale_log2 = (float)(1.4426950408889634 / sqrt((double)D));  // exp(x / sqrt(d)) = exp2(x * scale_log2)
    dim3 grid((seq_len + BM - 1) / BM, batch_heads);
    kernel<<<grid, THREADS, smem>>>(Q, K, V, O, seq_len, scale_log2);
}

template <int D>
void dispatch(const half* Q, const half* K, const half* V, half* O, int batch_heads, int seq_len) {
    // 16-byte cp.async needs 16-byte aligned rows (rows are D halves, so the bases
    // decide), the half2 stores of O 4-byte alignment
    bool aligned = ((uintptr_t)Q | (uintptr_t)K | (uintptr_t)V) % 16 == 0 && (uintptr_t)O % 4 == 0;
    if (aligned)
        launch<D, true>(Q, K, V, O, batch_heads, seq_len);
    else
        launch<D, false>(Q, K, V, O, batch_heads, seq_len);
}

}  // namespace

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int batch, int heads, int seq_len,
                      int head_dim) {
    // head_dim is 64 or 128 (the challenge's constraint)
    if (head_dim == 64)
        dispatch<64>(Q, K, V, O, batch * heads, seq_len);
    else if (head_dim == 128)
        dispatch<128>(Q, K, V, O, batch * heads, seq_len);
}
