// The cost of one split-precision 64 x 64 x 64 matrix product on an H200's tensor cores, done eight ways
// (five 3xTF32, three in halves): the measurement behind the question whether the scan kernels
// (reference/mamba3_scan.cu, reference/mamba3_scan_backward.cu) should keep their operands pre-split in
// shared memory, and in which precision. The numbers go into their notes (reference/mamba3_scan.md,
// reference/mamba3_scan_backward.md).
//
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a reference/tf32_product_probe.cu -o /tmp/probe && /tmp/probe
//
// The product: C (64 x 64, float32) += A (64 x 64) B (64 x 64), every operand v = hi + lo (hi = v with
// its 13 low mantissa bits cleared, lo = v - hi, exact), C += hi hi + hi lo + lo hi accumulated in
// float32. The tensor core reads only the upper 19 bits of a tf32 operand, so a raw float is its own hi.
// The operands start where the scan kernels have them: floats in shared memory, A [m][k] and B [k][n],
// rows padded to 68 floats. Each block of 8 warps computes the whole 64 x 64 output:
//   fragments  what the scan kernels do today (mma_tiles): each warp a 16 x 32 tile (four m16n8 tiles
//              sharing one A fragment), fragment elements by scalar shared loads, split in registers at
//              every use (LOP3 + FADD), three mma.sync m16n8k8 tf32 per tile and k step of 8;
//   ldmatrix   a split pass writes hi (the raw value) and lo of A [m][k] and of B transposed, [n][k], in
//              rows of 68 floats (8 rows of 16 bytes at 272-byte steps cover all 32 banks), then the same
//              warp tiles and mma.sync with fragments from ldmatrix.x4 (for 32-bit elements thread i of
//              an 8 x 4-word matrix gets row i / 4, word i % 4: the tf32 fragment layout), 6 ldmatrix per
//              warp and k step for 12 mma;
//   wgmma      the split pass writes the four arrays in the K-major 128-byte-swizzled layout that wgmma's
//              matrix descriptors read (tf32 operands are K-major only, hence B transposed), and each
//              warpgroup computes 64 x 32 over the full K (m64n32k8; splitting K between the warpgroups
//              instead would need their two 64 x 64 partial sums added through shared memory every
//              product), three wgmma per k step into one accumulator, one commit group per product;
//   wgmma_a_regs  as wgmma, but only B is split into shared memory: each warp loads and splits its rows
//              of A as fragments does and the wgmma read A from registers (any layout of A will do,
//              which is what the scan kernels' time-major operands need);
//   wgmma_two  two products a round, one per warpgroup, each a whole 64 x 64 m64n64k8 chain with A from
//              registers: A B, and (A B)^T = B^T A^T with A as the split operand. A scan kernel has
//              independent products to give its two warpgroups, and then loads each register operand
//              once (the variants above load A in both warpgroups);
//   f16x2      every operand in two halves (22 significant bits, as 3xTF32's two tf32), each row of A
//              and column of B scaled by a power of two into a half's range; a split pass writes A and
//              B^T in halves, then mma.sync m16n8k16 (half as many mma as m16n8k8) from ldmatrix.x4;
//   f16x2_once as f16x2, but the split pass runs once per block, when its operands are staged: the
//              products alone, as in a kernel that writes its operands in halves in the first place;
//   f16x2_regs as f16x2, but each thread's elements stay in registers from one round to the next, so
//              that a round splits them without loading them: the conversion's own cost.
// The split pass reads every element once and belongs to every product (but f16x2_once's): in a scan
// kernel the operands change every chunk. Each product starts after a barrier (the one after which a
// scan kernel's operands are ready); the split variants add a second one after their split pass (wgmma
// after fence.proxy.async).
//
// Launch: 2048 blocks of 256 threads, SMEM_BYTES of dynamic shared memory each (two blocks per SM for
// every variant), each block REPS rounds of its own A and B (staged once from global memory), one
// product a round (wgmma_two: two), summed into C = REPS A B (wgmma_two: the mean of its warpgroups'
// sums). Timed with CUDA events over 30 launches (after 3 warm-ups) at REPS and 2 REPS rounds a block:
// the difference of the medians is 2048 REPS rounds without the launch, the staging and the store.
// Before timing, C of four blocks is checked against float64 (A and B
// uniform in [-1, 1) times 2^-6 .. 2^6): an error above 1e-5 of REPS sum |a| |b| (3xTF32 leaves about
// 2^-20 of it, a lost lo term 2^-11) fails, and the program exits with status 1.
//
// With TF32_PROBE_NO_MAIN defined only the device code is compiled: tests/test_floor_probe.py puts this
// text in front of tests/emu_programs/tf32_probe_as_sgemm.cu and runs each product routine on emu as an
// sgemm_fp32 solution (emu translates only a solution's own text, so an #include would not do).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

// wgmma exists only on the architecture-specific target sm_90a (nvcc 13's -arch=sm_90a also builds
// compute_90, hence the -gencode above), as in reference/hgemm.cu.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "this probe uses wgmma (Hopper's warpgroup MMA), which only the sm_90a target has"
#endif

namespace tf32_probe {

constexpr int TILE = 64;          // M = N = K of one product
constexpr int STRIDE = TILE + 4;  // row stride (floats) of the padded arrays, as in the scan kernels
constexpr int THREADS = 256;      // 8 warps, 2 warpgroups
constexpr int PADDED_BYTES = TILE * STRIDE * 4;
constexpr int SWIZZLED_BYTES = TILE * TILE * 4;  // two K halves of 64 rows x 128 bytes
// From a 1024-aligned base: raw A [m][k] and B [k][n], then the split arrays A hi, A lo, B^T hi, B^T lo
// (padded for ldmatrix, swizzled for wgmma). Every variant gets the same size, so the same occupancy.
constexpr int OFF_A = 0, OFF_B = PADDED_BYTES, OFF_SPLIT = 2 * PADDED_BYTES;
constexpr int SMEM_BYTES = OFF_SPLIT + 4 * PADDED_BYTES + 1024;  // + room to align the base
static_assert(OFF_SPLIT % 1024 == 0, "wgmma's swizzle pattern repeats every 1024 bytes from an aligned base");
static_assert(SWIZZLED_BYTES <= PADDED_BYTES, "the swizzled arrays fit where the padded ones go");
// f16x2: the split arrays A hi, A lo, B^T hi, B^T lo in halves, rows of 72 (144 bytes: 8 rows of 16 bytes
// cover all 32 banks for ldmatrix), then per row of A and per column of B the inverse of its scale, and
// the columns' maxima (float bits) while B is split.
constexpr int F16_ROW_BYTES = (TILE + 8) * 2;
constexpr int F16_BYTES = TILE * F16_ROW_BYTES;
constexpr int OFF_F16_SCALES = OFF_SPLIT + 4 * F16_BYTES;
static_assert(4 * F16_BYTES + 3 * TILE * 4 <= 4 * PADDED_BYTES, "the f16 arrays and scales fit in the split region");

enum class Variant {
    fragments,
    ldmatrix,
    wgmma,
    wgmma_a_regs,
    wgmma_two_products,
    f16x2,
    f16x2_split_once,
    f16x2_from_registers,
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned char* align_1024(unsigned char* raw) {
    const uint32_t s = smem_u32(raw);
    return raw + (((s + 1023u) & ~1023u) - s);
}

// Warp w owns rows 16 (w % 4).. and columns 32 (w / 4)..: four m16n8 tiles for mma.sync, and the rows
// of warp w % 4 in the m64n32 tile of warpgroup w / 4 for wgmma. Both fragments put accumulator i at
// row g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 tg + (i & 1) of the warp's tile (g = lane / 4, tg = lane % 4).
__device__ __forceinline__ int warp_row0() { return 16 * ((threadIdx.x / 32) % 4); }
__device__ __forceinline__ int warp_col0() { return 32 * (threadIdx.x / 128); }
// accumulator i's row and column in its warp's 16 rows of the warpgroup's tile
__device__ __forceinline__ void accumulator_coord(int i, int& row, int& col) {
    const int lane = threadIdx.x & 31;
    row = warp_row0() + (lane >> 2) + 8 * ((i >> 1) & 1);
    col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
}
__device__ __forceinline__ void output_coord(int i, int& row, int& col) {
    accumulator_coord(i, row, col);
    col += warp_col0();
}

// hi: the bits a tensor core reads (one LOP3); lo = v - hi is exact and is read to its upper 19 bits.
__device__ __forceinline__ uint32_t high_bits(float v) { return __float_as_uint(v) & 0xffffe000u; }
__device__ __forceinline__ float low_part(float v) { return v - __uint_as_float(high_bits(v)); }
__device__ __forceinline__ void split(float v, uint32_t& hi, uint32_t& lo) {
    hi = high_bits(v);
    lo = __float_as_uint(low_part(v));
}
// This thread's m16n8k8 A fragment of rows m0.., columns k0.. (rows g, g + 8, columns tg, tg + 4), read
// through at(row, k) and split.
template <class At>
__device__ __forceinline__ void a_fragment(uint32_t (&hi)[4], uint32_t (&lo)[4], int m0, int k0, At at) {
    const int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    split(at(m0 + g, k0 + tg), hi[0], lo[0]);
    split(at(m0 + g + 8, k0 + tg), hi[1], lo[1]);
    split(at(m0 + g, k0 + tg + 4), hi[2], lo[2]);
    split(at(m0 + g + 8, k0 + tg + 4), hi[3], lo[3]);
}
__device__ __forceinline__ float4 low_parts(float4 v) {
    return make_float4(low_part(v.x), low_part(v.y), low_part(v.z), low_part(v.w));
}

__device__ __forceinline__ void mma_tf32(float* d, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}
// D (64 x 32, float32) += A (64 x 8) B (8 x 32), both K-major through matrix descriptors.
__device__ __forceinline__ void wgmma_m64n32k8(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(desc_a), "l"(desc_b), "r"(1));
}
// The same with A (this warp's 16 rows of the 64) from registers, in mma.sync's m16n8k8 fragment layout.
__device__ __forceinline__ void wgmma_m64n32k8_a_regs(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, "
                 "p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
// D (64 x 64) += A (64 x 8, from registers as above) B (8 x 64, K-major through a descriptor).
__device__ __forceinline__ void wgmma_m64n64k8_a_regs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "
                 "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
// Makes this thread's generic-proxy stores to shared memory visible to the async proxy wgmma reads
// through; the barrier after it extends that to every thread's stores.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_one() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

// Byte offset of the 16-byte chunk c (elements 4c..4c+3 of K) of row r in a split array [row][k].
// ldmatrix: rows of 68 floats. wgmma: K-major with the 128-byte swizzle, K halves of 64 rows x 128
// bytes one after the other, chunk c % 8 of a row stored at (c ^ r) % 8.
__device__ __forceinline__ uint32_t padded_offset(int r, int c) { return (uint32_t)(r * STRIDE + 4 * c) * 4; }
__device__ __forceinline__ uint32_t swizzled_offset(int r, int c) {
    return (uint32_t)((c / 8) * TILE * 128 + r * 128 + ((c ^ r) % 8) * 16);
}

// The split pass: every element of A and B read once from the raw arrays, hi (the raw value) and lo
// written to the split arrays (ARRAY_BYTES apart), A as it is, B transposed. A goes by 16-byte chunks,
// 8 threads along a row. B goes by 4 x 4 blocks transposed in registers, thread t taking block
// (kb, nb) = (l + 8 (p % 2), (l + p / 2) % 16), l = t % 8, p = t / 8: along diagonals, so that the 8
// threads of each 16-byte access phase read and write 8 distinct bank groups in both layouts.
template <int ARRAY_BYTES, class Offset>
__device__ __forceinline__ void split_a(unsigned char* smem, Offset offset) {
    const float* sA = reinterpret_cast<const float*>(smem + OFF_A);
    unsigned char* out = smem + OFF_SPLIT;
    const int t = threadIdx.x;
#pragma unroll
    for (int i = 0; i < TILE * TILE / 4 / THREADS; ++i) {
        const int f = t + THREADS * i, m = f / (TILE / 4), c = f % (TILE / 4);
        const float4 v = *reinterpret_cast<const float4*>(sA + m * STRIDE + 4 * c);
        *reinterpret_cast<float4*>(out + offset(m, c)) = v;
        *reinterpret_cast<float4*>(out + ARRAY_BYTES + offset(m, c)) = low_parts(v);
    }
}
// This thread's 4 x 4 block of B [k][n] in split_b's order, (kb, nb) = (l + 8 (p % 2), (l + p / 2) % 16),
// l = t % 8, p = t / 8, read by rows and returned as its columns n = 4 nb + j (k = 4 kb .. 4 kb + 3).
__device__ __forceinline__ void b_block_columns(const unsigned char* smem, int& kb, int& nb, float4 (&cols)[4]) {
    const float* sB = reinterpret_cast<const float*>(smem + OFF_B);
    const int t = threadIdx.x, l = t % 8, p = t / 8;
    kb = l + 8 * (p % 2);
    nb = (l + p / 2) % 16;
    float4 rows[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) rows[i] = *reinterpret_cast<const float4*>(sB + (4 * kb + i) * STRIDE + 4 * nb);
    cols[0] = make_float4(rows[0].x, rows[1].x, rows[2].x, rows[3].x);
    cols[1] = make_float4(rows[0].y, rows[1].y, rows[2].y, rows[3].y);
    cols[2] = make_float4(rows[0].z, rows[1].z, rows[2].z, rows[3].z);
    cols[3] = make_float4(rows[0].w, rows[1].w, rows[2].w, rows[3].w);
}
template <int ARRAY_BYTES, class Offset>
__device__ __forceinline__ void split_b(unsigned char* smem, Offset offset) {
    unsigned char* out = smem + OFF_SPLIT;
    int kb, nb;
    float4 cols[4];
    b_block_columns(smem, kb, nb, cols);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const uint32_t at = offset(4 * nb + j, kb);
        *reinterpret_cast<float4*>(out + 2 * ARRAY_BYTES + at) = cols[j];
        *reinterpret_cast<float4*>(out + 3 * ARRAY_BYTES + at) = low_parts(cols[j]);
    }
}
template <int ARRAY_BYTES, class Offset>
__device__ __forceinline__ void split_operands(unsigned char* smem, Offset offset) {
    split_a<ARRAY_BYTES>(smem, offset);
    split_b<ARRAY_BYTES>(smem, offset);
}

// (a) As mma_tiles in the scan kernels: fragment coordinates of m16n8k8 are a rows g, g+8 and columns
// tg, tg+4, b rows tg, tg+4 and column g. B's loads from [k][n] at 68-float row steps hit banks
// 4 tg + g + const: 2-way conflicts. The small terms go to their own accumulators, so a k step waits
// on two dependent mma instead of three.
__device__ __forceinline__ void product_fragments(float (&acc)[16], const unsigned char* smem) {
    const float* sA = reinterpret_cast<const float*>(smem + OFF_A);
    const float* sB = reinterpret_cast<const float*>(smem + OFF_B);
    const int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3, m0 = warp_row0(), n0 = warp_col0();
    float small[16] = {};
#pragma unroll
    for (int k0 = 0; k0 < TILE; k0 += 8) {
        uint32_t ah[4], al[4];
        a_fragment(ah, al, m0, k0, [&](int m, int k) { return sA[m * STRIDE + k]; });
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const float b[2] = {sB[(k0 + tg) * STRIDE + n0 + 8 * q + g], sB[(k0 + tg + 4) * STRIDE + n0 + 8 * q + g]};
            uint32_t bh[2], bl[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) split(b[i], bh[i], bl[i]);
            mma_tf32(small + 4 * q, al, bh);
            mma_tf32(small + 4 * q, ah, bl);
            mma_tf32(acc + 4 * q, ah, bh);
        }
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] += small[i];
}

// (b) ldmatrix.x4 lane addresses: A's four 8 x 4 quadrants of a 16 x 8 tile (rows + 0 or 8, k 0-3 or
// 4-7) are a0..a3; B^T rows n of two 8-column tiles with k 0-3 and 4-7 are b0, b1 of tile 2p and of 2p + 1.
__device__ __forceinline__ void product_ldmatrix(float (&acc)[16], unsigned char* smem) {
    split_operands<PADDED_BYTES>(smem, padded_offset);
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const uint32_t split_s = smem_u32(smem + OFF_SPLIT);
    const uint32_t a_lane = split_s + padded_offset(warp_row0() + (lane & 7) + 8 * ((lane >> 3) & 1), lane >> 4);
    const uint32_t b_lane =
        split_s + 2 * PADDED_BYTES + padded_offset(warp_col0() + (lane & 7) + 8 * (lane >> 4), (lane >> 3) & 1);
    float small[16] = {};
#pragma unroll
    for (int k0 = 0; k0 < TILE; k0 += 8) {
        uint32_t ah[4], al[4];
        ldmatrix_x4(ah, a_lane + 4 * k0);
        ldmatrix_x4(al, a_lane + PADDED_BYTES + 4 * k0);
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            uint32_t bh[4], bl[4];
            const uint32_t b = b_lane + padded_offset(16 * p, 0) + 4 * k0;
            ldmatrix_x4(bh, b);
            ldmatrix_x4(bl, b + PADDED_BYTES);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float* tile = small + 4 * (2 * p + h);
                mma_tf32(tile, al, bh + 2 * h);
                mma_tf32(tile, ah, bl + 2 * h);
                mma_tf32(acc + 4 * (2 * p + h), ah, bh + 2 * h);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] += small[i];
}

// K-major, 128-byte swizzle (mode 1, bits 62-63): 8-row groups 1024 bytes apart (SBO); the leading
// offset is unused in this mode and set to 16 bytes.
__device__ __forceinline__ uint64_t descriptor(uint32_t start) {
    return (uint64_t)((start & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 | 1ull << 62;
}

// (c) Warpgroup w multiplies all of A by rows 32w..32w+31 of B^T; k step s starts 32 bytes into each
// 128-byte row of K half s / 4, which moves a descriptor's start field by that many 16-byte units.
// The warpgroup's column offset is broadcast from lane 0 so that the compiler knows it is warp-uniform:
// the descriptors are then built in uniform registers (without it, every one of the 48 descriptor
// operands of a product was moved there by an R2UR).
__device__ __forceinline__ void product_wgmma(float (&acc)[16], unsigned char* smem) {
    split_operands<SWIZZLED_BYTES>(smem, swizzled_offset);
    fence_proxy_async();
    __syncthreads();
    const uint64_t a_hi = descriptor(smem_u32(smem + OFF_SPLIT)), a_lo = a_hi + SWIZZLED_BYTES / 16;
    const int col0 = __shfl_sync(0xffffffffu, warp_col0(), 0);
    const uint64_t b_hi = a_hi + (2 * SWIZZLED_BYTES + col0 * 128) / 16, b_lo = b_hi + SWIZZLED_BYTES / 16;
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < TILE / 8; ++s) {
        const uint32_t k = ((s / 4) * TILE * 128 + (s % 4) * 32) / 16;
        wgmma_m64n32k8(acc, a_lo + k, b_hi + k);
        wgmma_m64n32k8(acc, a_hi + k, b_lo + k);
        wgmma_m64n32k8(acc, a_hi + k, b_hi + k);
    }
    wgmma_commit();
    wgmma_wait_all();  // the next product rewrites the split arrays
}

// (d) As (c), but only B goes through the split pass: each warp loads its 16 rows of A for every k step
// with scalar shared loads from A's own layout (any layout would do) and splits them in registers, as
// (a) does, and the wgmma read A from registers. This is the form the scan kernels could take without
// transposed copies of their time-major operands: of each product's two operands only the one that is
// already K-major (or written by the kernel itself) needs to be split into shared memory.
__device__ __forceinline__ void product_wgmma_a_regs(float (&acc)[16], unsigned char* smem) {
    split_b<SWIZZLED_BYTES>(smem, swizzled_offset);
    fence_proxy_async();
    __syncthreads();
    const float* sA = reinterpret_cast<const float*>(smem + OFF_A);
    uint32_t ah[TILE / 8][4], al[TILE / 8][4];
#pragma unroll
    for (int s = 0; s < TILE / 8; ++s)
        a_fragment(ah[s], al[s], warp_row0(), 8 * s, [&](int m, int k) { return sA[m * STRIDE + k]; });
    const int col0 = __shfl_sync(0xffffffffu, warp_col0(), 0);
    const uint64_t b_hi = descriptor(smem_u32(smem + OFF_SPLIT + 2 * SWIZZLED_BYTES + col0 * 128)),
                   b_lo = b_hi + SWIZZLED_BYTES / 16;
    wgmma_fence();  // orders the fragment registers' writes before the wgmma read them
#pragma unroll
    for (int s = 0; s < TILE / 8; ++s) {
        const uint32_t k = ((s / 4) * TILE * 128 + (s % 4) * 32) / 16;
        wgmma_m64n32k8_a_regs(acc, al[s], b_hi + k);
        wgmma_m64n32k8_a_regs(acc, ah[s], b_lo + k);
        wgmma_m64n32k8_a_regs(acc, ah[s], b_hi + k);
    }
    wgmma_commit();
    wgmma_wait_all();  // the next product rewrites the split arrays
}

// (e) Two products at once, one per warpgroup, each 64 x 64 in one m64n64k8 chain with A from registers
// (as in (d)): warpgroup 0 forms A B (B^T split, A's fragments from A [m][k]), warpgroup 1 forms
// (A B)^T = B^T A^T (A split, B^T's fragments read from B [k][n]). So each product loads its register
// operand once, where (c) and (d) load A in both warpgroups; in a scan kernel the two warpgroups would
// take two of a chunk's independent products. Each thread's 32 accumulators are at accumulator_coord.
__device__ __forceinline__ void product_two_wgmma(float (&acc)[32], unsigned char* smem) {
    split_operands<SWIZZLED_BYTES>(smem, swizzled_offset);
    fence_proxy_async();
    __syncthreads();
    const float* sA = reinterpret_cast<const float*>(smem + OFF_A);
    const float* sB = reinterpret_cast<const float*>(smem + OFF_B);
    const bool second = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) == 1;  // warp-uniform
    // the register operand's element (row, k): A [m][k], or B^T read from B [k][n]
    auto reg_operand = [&](int row, int k) { return second ? sB[k * STRIDE + row] : sA[row * STRIDE + k]; };
    // the split operand: B^T (arrays 2 and 3) for warpgroup 0, A (arrays 0 and 1) for warpgroup 1
    const uint64_t b_hi = descriptor(smem_u32(smem + OFF_SPLIT + (second ? 0 : 2 * SWIZZLED_BYTES))),
                   b_lo = b_hi + SWIZZLED_BYTES / 16;
    // the fragments of two k steps in registers at a time: a step's three wgmma (one commit group) read
    // its fragments asynchronously, so they are overwritten two steps later, once at most one group is
    // pending (eight steps' fragments would not fit beside the 64 accumulators of acc and the sums)
    uint32_t ah[2][4], al[2][4];
#pragma unroll
    for (int s = 0; s < TILE / 8; ++s) {
        const int buf = s % 2;
        if (s >= 2) wgmma_wait_one();
        a_fragment(ah[buf], al[buf], warp_row0(), 8 * s, reg_operand);
        wgmma_fence();
        const uint32_t k = ((s / 4) * TILE * 128 + (s % 4) * 32) / 16;
        wgmma_m64n64k8_a_regs(acc, al[buf], b_hi + k);
        wgmma_m64n64k8_a_regs(acc, ah[buf], b_lo + k);
        wgmma_m64n64k8_a_regs(acc, ah[buf], b_hi + k);
        wgmma_commit();
    }
    wgmma_wait_all();
}

// (f) f16x2: every operand v = (hi + lo) / s in two halves, hi = half(v s), lo = half(v s - hi), both
// rounded to nearest: 22 significant bits, as many as 3xTF32's hi and lo, but a half's exponent spans
// only 2^-24 .. 2^15. So each row of A and each column of B (the dimension a product does not sum
// over) gets its own power of two s, which puts its largest |v| in [2^14, 2^15), and the sum of the
// row's and column's products is divided by both scales at the end. A split pass writes A [m][k] and
// B^T [n][k] in halves; the products are mma.sync m16n8k16 (twice the k of the tf32 form, so half the
// mma: 48 per warp and product) with fragments from ldmatrix.x4, 6 per warp and k step of 16. A scan
// kernel would split each operand once for all the products that use it, and where its values pass
// through registers anyway without the loads: f16x2_once (Variant::f16x2_split_once) measures the
// products alone, f16x2_regs (Variant::f16x2_from_registers) the split without its loads.
__device__ __forceinline__ void mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// The scale 2^e that puts max_abs in [2^14, 2^15) (at most 2^126, so that its inverse stays normal).
__device__ __forceinline__ float half_scale(float max_abs) {
    const int e = (int)(__float_as_uint(max_abs) >> 23);  // biased exponent
    return __uint_as_float((uint32_t)min(268 - e, 253) << 23);
}
// 1 / s for such a power of two, exactly, by its exponent (a division would add a slow path).
__device__ __forceinline__ float half_scale_inverse(float s) {
    return __uint_as_float((254u << 23) - __float_as_uint(s));
}
// Two floats (times s) as the hi and lo halves, packed two to a word (the first in the low half).
__device__ __forceinline__ void split_half2(float a, float b, float s, uint32_t& hi, uint32_t& lo) {
    const __half2 h = __floats2half2_rn(a * s, b * s);
    const float2 back = __half22float2(h);
    const __half2 l = __floats2half2_rn(a * s - back.x, b * s - back.y);
    hi = *reinterpret_cast<const uint32_t*>(&h);
    lo = *reinterpret_cast<const uint32_t*>(&l);
}
__device__ __forceinline__ uint32_t f16_offset(int row, int k) { return (uint32_t)(row * F16_ROW_BYTES + 2 * k); }

// A thread's elements for the split into halves: its four 16-byte chunks of A (split_a's order: chunk
// i of thread t is chunk (t + THREADS i) % 16 of row (t + THREADS i) / 16) and its 4 x 4 block of B.
struct HalfSplitInput {
    float4 a[TILE * TILE / 4 / THREADS];
    float4 b_cols[4];
    int kb, nb;
};
__device__ __forceinline__ void load_split_input(const unsigned char* smem, HalfSplitInput& in) {
    const float* sA = reinterpret_cast<const float*>(smem + OFF_A);
#pragma unroll
    for (int i = 0; i < TILE * TILE / 4 / THREADS; ++i) {
        const int f = threadIdx.x + THREADS * i;
        in.a[i] = *reinterpret_cast<const float4*>(sA + (f / (TILE / 4)) * STRIDE + 4 * (f % (TILE / 4)));
    }
    b_block_columns(smem, in.kb, in.nb, in.b_cols);
}
// The split into halves from those elements: A's rows by 16 threads each (the row's maximum by
// shuffles), B's columns' maxima by shared-memory atomics on the floats' bits (which order as unsigned
// integers for |v|), between barriers.
__device__ __forceinline__ void split_f16x2_values(unsigned char* smem, const HalfSplitInput& in) {
    unsigned char* out = smem + OFF_SPLIT;
    float* inv_a = reinterpret_cast<float*>(smem + OFF_F16_SCALES);
    float* inv_b = inv_a + TILE;
    unsigned* col_max = reinterpret_cast<unsigned*>(inv_b + TILE);
    const int t = threadIdx.x, kb = in.kb, nb = in.nb;
    if (t < TILE) col_max[t] = 0u;
#pragma unroll
    for (int i = 0; i < TILE * TILE / 4 / THREADS; ++i) {
        const int f = t + THREADS * i, m = f / (TILE / 4), c = f % (TILE / 4);
        const float4 v = in.a[i];
        float mx = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float s = half_scale(mx);
        uint2 hi, lo;
        split_half2(v.x, v.y, s, hi.x, lo.x);
        split_half2(v.z, v.w, s, hi.y, lo.y);
        *reinterpret_cast<uint2*>(out + f16_offset(m, 4 * c)) = hi;
        *reinterpret_cast<uint2*>(out + F16_BYTES + f16_offset(m, 4 * c)) = lo;
        if (c == 0) inv_a[m] = half_scale_inverse(s);
    }
    __syncthreads();  // col_max zeroed
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float4 v = in.b_cols[j];
        const float mx = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
        atomicMax(col_max + 4 * nb + j, __float_as_uint(mx));
    }
    __syncthreads();  // every column's maximum
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int n = 4 * nb + j;
        const float s = half_scale(__uint_as_float(col_max[n]));
        uint2 hi, lo;
        split_half2(in.b_cols[j].x, in.b_cols[j].y, s, hi.x, lo.x);
        split_half2(in.b_cols[j].z, in.b_cols[j].w, s, hi.y, lo.y);
        *reinterpret_cast<uint2*>(out + 2 * F16_BYTES + f16_offset(n, 4 * kb)) = hi;
        *reinterpret_cast<uint2*>(out + 3 * F16_BYTES + f16_offset(n, 4 * kb)) = lo;
        if (kb == 0) inv_b[n] = half_scale_inverse(s);
    }
}
// The split pass: the elements from shared memory, then their split.
__device__ __forceinline__ void split_f16x2(unsigned char* smem) {
    HalfSplitInput in;
    load_split_input(smem, in);
    split_f16x2_values(smem, in);
}

// The products from the split arrays. ldmatrix.x4 lane addresses: A's rows m0 + (lane % 16), k 0-7 for
// lanes 0-15 and 8-15 for 16-31 (a0..a3 of m16n8k16); B^T's rows n of two 8-column tiles, k 0-7 and 8-15
// (b0, b1 of tile 2p and of 2p + 1). Small terms in their own accumulators, as in (a).
__device__ __forceinline__ void product_f16x2(float (&acc)[16], const unsigned char* smem) {
    const int lane = threadIdx.x & 31;
    const uint32_t split_s = smem_u32(smem + OFF_SPLIT);
    const uint32_t a_lane = split_s + f16_offset(warp_row0() + (lane & 15), 8 * (lane >> 4));
    const uint32_t b_lane =
        split_s + 2 * F16_BYTES + f16_offset(warp_col0() + (lane & 7) + 8 * (lane >> 4), 8 * ((lane >> 3) & 1));
    float sum[16] = {}, small[16] = {};
#pragma unroll
    for (int k0 = 0; k0 < TILE; k0 += 16) {
        uint32_t ah[4], al[4];
        ldmatrix_x4(ah, a_lane + 2 * k0);
        ldmatrix_x4(al, a_lane + F16_BYTES + 2 * k0);
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            uint32_t bh[4], bl[4];
            const uint32_t b = b_lane + f16_offset(16 * p, k0);
            ldmatrix_x4(bh, b);
            ldmatrix_x4(bl, b + F16_BYTES);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int q = 2 * p + h;
                mma_f16(small + 4 * q, al, bh + 2 * h);
                mma_f16(small + 4 * q, ah, bl + 2 * h);
                mma_f16(sum + 4 * q, ah, bh + 2 * h);
            }
        }
    }
    const float* inv_a = reinterpret_cast<const float*>(smem + OFF_F16_SCALES);
    const float* inv_b = inv_a + TILE;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        int row, col;
        output_coord(i, row, col);
        acc[i] = fmaf((sum[i] + small[i]) * inv_a[row], inv_b[col], acc[i]);
    }
}

// Once a block's operands are staged (and a barrier has passed): f16x2_split_once's split pass. Every
// other variant splits inside its product, every round.
template <Variant V>
__device__ __forceinline__ void prepare(unsigned char* smem) {
    if constexpr (V == Variant::f16x2_split_once) {
        split_f16x2(smem);
        __syncthreads();
    }
}

// One product: acc (output_coord's layout) += A B, from A at OFF_A and B at OFF_B. All 256 threads
// call it after a barrier that follows the last writes of A and B and the previous product.
template <Variant V>
__device__ __forceinline__ void product(float (&acc)[16], unsigned char* smem) {
    if constexpr (V == Variant::fragments) product_fragments(acc, smem);
    else if constexpr (V == Variant::ldmatrix) product_ldmatrix(acc, smem);
    else if constexpr (V == Variant::wgmma) product_wgmma(acc, smem);
    else if constexpr (V == Variant::f16x2) {
        split_f16x2(smem);
        __syncthreads();
        product_f16x2(acc, smem);
    } else if constexpr (V == Variant::f16x2_split_once) product_f16x2(acc, smem);
    else {
        static_assert(V == Variant::wgmma_a_regs, "wgmma_two (product_two_wgmma) and f16x2_regs (a branch of "
                                                  "repeated_products) are not one-product routines");
        product_wgmma_a_regs(acc, smem);
    }
}

// A_b and B_b of block b (64 x 64 row-major) into the raw arrays; returns b's offset in A, B and C.
__device__ __forceinline__ size_t stage_block_operands(unsigned char* smem, const float* A, const float* B) {
    float* sA = reinterpret_cast<float*>(smem + OFF_A);
    float* sB = reinterpret_cast<float*>(smem + OFF_B);
    const size_t base = (size_t)blockIdx.x * TILE * TILE;
    for (int f = threadIdx.x; f < TILE * TILE / 4; f += THREADS) {
        const int r = f / (TILE / 4), c = 4 * (f % (TILE / 4));
        *reinterpret_cast<float4*>(sA + r * STRIDE + c) = *reinterpret_cast<const float4*>(A + base + r * TILE + c);
        *reinterpret_cast<float4*>(sB + r * STRIDE + c) = *reinterpret_cast<const float4*>(B + base + r * TILE + c);
    }
    return base;
}

// Block b: REPS products of its own A_b and B_b (staged once), each into its own accumulators as a scan
// kernel's product, summed in float32 and written as C_b = REPS A_b B_b. (One accumulator for all REPS
// would chain REPS times more tensor-core additions onto each sum, whose rounding the check would then
// see instead of the split's.) f16x2_regs loads each thread's elements into registers once, so that a
// round's split is the conversion alone (maxima, scales, halves, their stores and barriers), as for a scan
// kernel's operands that pass through registers anyway (those it computes, or stages through registers).
template <Variant V, int REPS>
__global__ void __launch_bounds__(THREADS, 2)
repeated_products(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = align_1024(smem_raw);
    const size_t base = stage_block_operands(smem, A, B);
    __syncthreads();
    prepare<V>(smem);
    constexpr bool from_registers = V == Variant::f16x2_from_registers;
    HalfSplitInput in;
    if constexpr (from_registers) load_split_input(smem, in);
    float sum[16] = {};
#pragma unroll 1
    for (int rep = 0; rep < REPS; ++rep) {
        __syncthreads();
        float acc[16] = {};
        if constexpr (from_registers) {
            split_f16x2_values(smem, in);
            __syncthreads();
            product_f16x2(acc, smem);
        } else {
            product<V>(acc, smem);
        }
#pragma unroll
        for (int i = 0; i < 16; ++i) sum[i] += acc[i];
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        int row, col;
        output_coord(i, row, col);
        C[base + row * TILE + col] = sum[i];
    }
}

// wgmma_two's result: warpgroup 1's sums of (A B)^T go to warpgroup 0 through shared memory (the split
// arrays, free once every product is done), which passes the mean of the two to store(row, col, value).
template <class Store>
__device__ __forceinline__ void store_mean_of_pair(const float (&sum)[32], unsigned char* smem, Store store) {
    __syncthreads();
    float* transposed = reinterpret_cast<float*>(smem + OFF_SPLIT);
    const bool second = threadIdx.x >= 128;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        int row, col;
        accumulator_coord(i, row, col);
        if (second) transposed[col * STRIDE + row] = sum[i];
    }
    __syncthreads();
    if (second) return;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        int row, col;
        accumulator_coord(i, row, col);
        store(row, col, 0.5f * (sum[i] + transposed[row * STRIDE + col]));
    }
}

// wgmma_two's block: REPS rounds of two products, summed per warpgroup as above, C_b = the mean of the
// two sums = REPS A_b B_b.
template <int REPS>
__global__ void __launch_bounds__(THREADS, 2)
repeated_product_pairs(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = align_1024(smem_raw);
    const size_t base = stage_block_operands(smem, A, B);
    float sum[32] = {};
#pragma unroll 1
    for (int rep = 0; rep < REPS; ++rep) {
        __syncthreads();
        float acc[32] = {};
        product_two_wgmma(acc, smem);
#pragma unroll
        for (int i = 0; i < 32; ++i) sum[i] += acc[i];
    }
    store_mean_of_pair(sum, smem, [&](int row, int col, float v) { C[base + row * TILE + col] = v; });
}

}  // namespace tf32_probe

#ifndef TF32_PROBE_NO_MAIN

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        const cudaError_t err_ = (call);                                                       \
        if (err_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

namespace {

using namespace tf32_probe;

constexpr int BLOCKS = 2048;
constexpr int REPS = 16;  // products a block at 1x
constexpr int ELEMENTS = TILE * TILE;
constexpr double MMA_FLOPS = 3.0 * 2 * TILE * TILE * TILE;  // tensor-core flops of one product (three mma each)
constexpr double MAX_ERROR = 1e-5;

using Kernel = void (*)(const float*, const float*, float*);
struct Probe {
    const char* name;
    Kernel once, twice;  // REPS and 2 REPS rounds a block
    int products;        // per round
};
template <Variant V>
Probe probe(const char* name) {
    if constexpr (V == Variant::wgmma_two_products)
        return {name, repeated_product_pairs<REPS>, repeated_product_pairs<2 * REPS>, 2};
    else
        return {name, repeated_products<V, REPS>, repeated_products<V, 2 * REPS>, 1};
}

// SplitMix64: the same inputs on every run.
struct Random {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

// Uniform in [-1, 1) times 2^e, e uniform in -6..6: every dot product mixes magnitudes.
std::vector<float> mixed_magnitudes(size_t n, Random& rng) {
    std::vector<float> v(n);
    for (float& x : v) {
        const double u = 2.0 * static_cast<double>(rng.next() >> 11) * 0x1.0p-53 - 1.0;
        x = static_cast<float>(std::ldexp(u, static_cast<int>(rng.next() % 13) - 6));
    }
    return v;
}

// The largest |C - REPS A B| / (REPS sum_k |a| |b|) over block b's elements, A B in float64.
double block_error(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c, int block) {
    const float *A = a.data() + (size_t)block * ELEMENTS, *B = b.data() + (size_t)block * ELEMENTS,
                *C = c.data() + (size_t)block * ELEMENTS;
    double worst = 0.0;
    for (int m = 0; m < TILE; ++m)
        for (int n = 0; n < TILE; ++n) {
            double exact = 0.0, scale = 0.0;
            for (int k = 0; k < TILE; ++k) {
                exact += (double)A[m * TILE + k] * B[k * TILE + n];
                scale += std::fabs((double)A[m * TILE + k] * B[k * TILE + n]);
            }
            const double error = std::fabs(C[m * TILE + n] - REPS * exact) / (REPS * scale);
            if (std::isnan(error)) return INFINITY;  // C not written (NaN)
            worst = std::max(worst, error);
        }
    return worst;
}

struct Stats {
    float median, minimum, maximum;
};

// Microseconds of 30 launches after 3 warm-ups.
Stats time_launches(Kernel kernel, const float* A, const float* B, float* C) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> us;
    for (int r = 0; r < 33; ++r) {
        CHECK(cudaEventRecord(start));
        kernel<<<BLOCKS, THREADS, SMEM_BYTES>>>(A, B, C);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 3) us.push_back(ms * 1000.f);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us.front(), us.back()};
}

}  // namespace

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int khz = 0;
    CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    std::printf("%s, %d SMs, SM clock up to %d MHz; %d blocks of %d threads, %d (1x) or %d (2x) split products "
                "of 64 x 64 x 64 a block\n",
                prop.name, prop.multiProcessorCount, khz / 1000, BLOCKS, THREADS, REPS, 2 * REPS);

    Random rng{2026};
    const std::vector<float> a = mixed_magnitudes((size_t)BLOCKS * ELEMENTS, rng);
    const std::vector<float> b = mixed_magnitudes((size_t)BLOCKS * ELEMENTS, rng);
    const size_t bytes = sizeof(float) * BLOCKS * ELEMENTS;
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, bytes));
    CHECK(cudaMalloc(&dB, bytes));
    CHECK(cudaMalloc(&dC, bytes));
    CHECK(cudaMemcpy(dA, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b.data(), bytes, cudaMemcpyHostToDevice));

    const Probe probes[] = {probe<Variant::fragments>("fragments"), probe<Variant::ldmatrix>("ldmatrix"),
                            probe<Variant::wgmma>("wgmma"), probe<Variant::wgmma_a_regs>("wgmma_a_regs"),
                            probe<Variant::wgmma_two_products>("wgmma_two"), probe<Variant::f16x2>("f16x2"),
                            probe<Variant::f16x2_split_once>("f16x2_once"),
                            probe<Variant::f16x2_from_registers>("f16x2_regs")};
    std::printf("\n%-12s  registers  local bytes (spills)  dynamic shared  blocks/SM\n", "variant");
    for (const Probe& p : probes) {
        for (Kernel k : {p.once, p.twice})
            CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, p.once));
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p.once, THREADS, SMEM_BYTES));
        std::printf("%-12s  %9d  %20zu  %14d  %9d\n", p.name, attr.numRegs, attr.localSizeBytes, SMEM_BYTES, per_sm);
    }

    const int checked[] = {0, 1, BLOCKS / 2 + 7, BLOCKS - 1};
    std::printf("\nself-check: C of blocks 0, 1, %d, %d against float64 REPS A B, error / (REPS sum |a||b|)\n",
                checked[2], checked[3]);
    std::vector<float> c((size_t)BLOCKS * ELEMENTS);
    bool pass = true;
    for (const Probe& p : probes) {
        CHECK(cudaMemset(dC, 0xff, bytes));  // NaN where a kernel writes nothing
        const Kernel kernel = p.once;
        kernel<<<BLOCKS, THREADS, SMEM_BYTES>>>(dA, dB, dC);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(c.data(), dC, bytes, cudaMemcpyDeviceToHost));
        double worst = 0.0;
        for (int block : checked) worst = std::max(worst, block_error(a, b, c, block));
        const bool ok = worst <= MAX_ERROR;
        pass = pass && ok;
        std::printf("%-12s  max error %.2e  %s\n", p.name, worst, ok ? "PASS" : "FAIL");
    }
    if (!pass) return 1;

    std::printf("\nmedians of 30 launches (min .. max); %d products = (2x - 1x) / (%d x products a round)\n", BLOCKS,
                REPS);
    for (const Probe& p : probes) {
        const Stats one = time_launches(p.once, dA, dB, dC), two = time_launches(p.twice, dA, dB, dC);
        const double products_us = (two.median - one.median) / (REPS * p.products);
        std::printf("%-12s | 1x %7.1f us (%7.1f .. %7.1f) | 2x %7.1f us (%7.1f .. %7.1f) | %d products %6.2f us | "
                    "one product %5.2f ns of the GPU, %6.0f ns of an SM | %4.0f TFLOP/s in mma\n",
                    p.name, one.median, one.minimum, one.maximum, two.median, two.minimum, two.maximum, BLOCKS,
                    products_us, products_us * 1e3 / BLOCKS, products_us * 1e3 * prop.multiProcessorCount / BLOCKS,
                    MMA_FLOPS * BLOCKS / (products_us * 1e6));
    }
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    return 0;
}

#endif  // TF32_PROBE_NO_MAIN
