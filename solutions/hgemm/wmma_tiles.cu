// Tensor cores through nvcuda::wmma: each block computes a 64 x 64 tile of C
// with 4 warps of 32 x 32 (2 x 2 fragments of 16 x 16, float32 accumulators).
// A and B are staged in shared memory 32 columns / rows of K at a time, with
// zero padding past the edges, so any M, N, K work; the accumulators go
// through shared memory on the way out so that partial edge tiles are
// stored element by element. Synchronous loads and no pipelining: the step
// from here to mma_single_buffered_fragments.cu is cp.async stages, ldmatrix
// and larger tiles.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

constexpr int TILE = 64, TK = 32, PAD = 8;  // padding keeps wmma rows 32-byte aligned and spreads banks

__global__ void hgemm_wmma(const half* A, const half* B, float* C, int M, int N, int K) {
    __shared__ __align__(32) half As[TILE][TK + PAD];
    __shared__ __align__(32) half Bs[TK][TILE + PAD];
    __shared__ __align__(32) float Cs[4][32][32 + 4];
    int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = (warp / 2) * 32, wn = (warp % 2) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int e = threadIdx.x; e < TILE * TK; e += blockDim.x) {
            int r = e / TK, c = e % TK;
            As[r][c] = (m0 + r < M && k0 + c < K) ? A[(size_t)(m0 + r) * K + k0 + c] : __float2half(0.0f);
        }
        for (int e = threadIdx.x; e < TK * TILE; e += blockDim.x) {
            int r = e / TILE, c = e % TILE;
            Bs[r][c] = (k0 + r < K && n0 + c < N) ? B[(size_t)(k0 + r) * N + n0 + c] : __float2half(0.0f);
        }
        __syncthreads();
        for (int kk = 0; kk < TK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[2];
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(a[i], &As[wm + 16 * i][kk], TK + PAD);
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(b[j], &Bs[kk][wn + 16 * j], TILE + PAD);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&Cs[warp][16 * i][16 * j], acc[i][j], 32 + 4, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 32 * 32; e += 32) {
        int r = e / 32, c = e % 32, gm = m0 + wm + r, gn = n0 + wn + c;
        if (gm < M && gn < N) C[(size_t)gm * N + gn] = Cs[warp][r][c];
    }
}

extern "C" void solve(const half* A, const half* B, float* C, int M, int N, int K) {
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    hgemm_wmma<<<grid, 128>>>(A, B, C, M, N, K);
}
