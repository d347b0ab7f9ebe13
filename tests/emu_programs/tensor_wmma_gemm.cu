// C = A B with nvcuda::wmma: one warp per output tile, fragments of half,
// __nv_bfloat16, tf32 (raw float32 or rounded with __float_to_tf32) and
// double, row- or column-major operands, C stored row- or column-major.
// A is M x K, B is K x N (leading dimension M / K when column-major);
// M, N and K are multiples of the tile shape.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

using namespace nvcuda;

template <class Mem, class Frag, class Acc, int TM, int TN, int TK, class LA, class LB>
__global__ void wmma_gemm(const Mem* A, const Mem* B, Acc* C, int M, int N, int K, int c_col, int round_tf32) {
    constexpr bool a_col = std::is_same<LA, wmma::col_major>::value;
    constexpr bool b_col = std::is_same<LB, wmma::col_major>::value;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / TN;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * TM >= M) return;  // the whole warp leaves together
    wmma::fragment<wmma::accumulator, TM, TN, TK, Acc> acc;
    wmma::fill_fragment(acc, (Acc)0);
    for (int k = 0; k < K; k += TK) {
        wmma::fragment<wmma::matrix_a, TM, TN, TK, Frag, LA> a;
        wmma::fragment<wmma::matrix_b, TM, TN, TK, Frag, LB> b;
        wmma::load_matrix_sync(a, a_col ? A + (size_t)k * M + tm * TM : A + (size_t)tm * TM * K + k, a_col ? M : K);
        wmma::load_matrix_sync(b, b_col ? B + (size_t)tn * TN * K + k : B + (size_t)k * N + tn * TN, b_col ? K : N);
        if constexpr (std::is_same<Frag, wmma::precision::tf32>::value) {
            if (round_tf32) {  // elementwise on x[i]: portable whatever the lane mapping
                for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
                for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
            }
        }
        wmma::mma_sync(acc, a, b, acc);
    }
    Acc* c = c_col ? C + (size_t)tn * TN * M + tm * TM : C + (size_t)tm * TM * N + tn * TN;
    wmma::store_matrix_sync(c, acc, c_col ? M : N, c_col ? wmma::mem_col_major : wmma::mem_row_major);
}

template <class Mem, class Frag, class Acc, int TM, int TN, int TK, class LA, class LB>
void launch(const void* A, const void* B, void* C, int M, int N, int K, int c_col, int round_tf32) {
    int warps = (M / TM) * (N / TN);
    wmma_gemm<Mem, Frag, Acc, TM, TN, TK, LA, LB><<<(warps + 1) / 2, 64>>>(
        (const Mem*)A, (const Mem*)B, (Acc*)C, M, N, K, c_col, round_tf32);
}

// Lanes 16..31 skip mma_sync: a warp-synchronous op without the whole warp.
__global__ void half_warp_mma(float* C) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(a, __float2half(1.0f));
    wmma::fill_fragment(b, __float2half(1.0f));
    wmma::fill_fragment(acc, 0.0f);
    if (threadIdx.x < 16) wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}

using wmma::col_major;
using wmma::row_major;
using tf32 = wmma::precision::tf32;

// kind: 0 half, 1 bf16, 2 tf32 fed raw float32, 3 tf32 after __float_to_tf32,
// 4 double, 9 the half-warp misuse. variant picks the shape and layouts.
// C is float32 (double for kind 4).
extern "C" void solve(const void* A, const void* B, void* C, int M, int N, int K, int kind, int variant, int c_col) {
    switch (kind * 10 + variant) {
        case 0: launch<half, half, float, 16, 16, 16, row_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 1: launch<half, half, float, 16, 16, 16, row_major, col_major>(A, B, C, M, N, K, c_col, 0); break;
        case 2: launch<half, half, float, 16, 16, 16, col_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 3: launch<half, half, float, 16, 16, 16, col_major, col_major>(A, B, C, M, N, K, c_col, 0); break;
        case 4: launch<half, half, float, 32, 8, 16, row_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 5: launch<half, half, float, 8, 32, 16, col_major, col_major>(A, B, C, M, N, K, c_col, 0); break;
        case 10: launch<__nv_bfloat16, __nv_bfloat16, float, 16, 16, 16, row_major, col_major>(A, B, C, M, N, K, c_col, 0); break;
        case 14: launch<__nv_bfloat16, __nv_bfloat16, float, 32, 8, 16, row_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 15: launch<__nv_bfloat16, __nv_bfloat16, float, 8, 32, 16, col_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 20: case 30: launch<float, tf32, float, 16, 16, 8, row_major, row_major>(A, B, C, M, N, K, c_col, kind == 3); break;
        case 23: case 33: launch<float, tf32, float, 16, 16, 8, col_major, col_major>(A, B, C, M, N, K, c_col, kind == 3); break;
        case 41: launch<double, double, double, 8, 8, 4, row_major, col_major>(A, B, C, M, N, K, c_col, 0); break;
        case 42: launch<double, double, double, 8, 8, 4, col_major, row_major>(A, B, C, M, N, K, c_col, 0); break;
        case 90: half_warp_mma<<<1, 32>>>((float*)C); break;
        default: return;
    }
    cudaDeviceSynchronize();
}
