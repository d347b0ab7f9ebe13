// expect: wrong_output
// The warp-per-query design scaling scores by 1/head_dim instead of 1/sqrt(head_dim): a softmax 8 to 11 times too flat.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

#ifndef BUG
#define BUG 3  // 1: no max shift, 2: attends to every key (not causal), 3: scores scaled by 1/head_dim
#endif

template <int D>
__global__ void warp_per_query(const half* Q, const half* K, const half* V, half* O, int rows, int seq_len) {
    constexpr int PER_LANE = D / 32;
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;  // whole warps leave together
    int i = r % seq_len;
    size_t base = (size_t)(r - i) * D;
    float scale = BUG == 3 ? 1.0f / D : rsqrtf((float)D);
    float q[PER_LANE], acc[PER_LANE];
    for (int e = 0; e < PER_LANE; e++) {
        q[e] = __half2float(Q[(size_t)r * D + lane + 32 * e]);
        acc[e] = 0.0f;
    }
    float m = BUG == 1 ? 0.0f : -INFINITY, l = 0.0f;
    int last = BUG == 2 ? seq_len - 1 : i;
    for (int j = 0; j <= last; j++) {
        float s = 0.0f;
        for (int e = 0; e < PER_LANE; e++) s += q[e] * __half2float(K[base + (size_t)j * D + lane + 32 * e]);
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        s *= scale;
        float m_new = BUG == 1 ? 0.0f : fmaxf(m, s);
        float correction = expf(m - m_new), p = expf(s - m_new);
        l = l * correction + p;
        for (int e = 0; e < PER_LANE; e++)
            acc[e] = acc[e] * correction + p * __half2float(V[base + (size_t)j * D + lane + 32 * e]);
        m = m_new;
    }
    for (int e = 0; e < PER_LANE; e++) O[(size_t)r * D + lane + 32 * e] = __float2half(acc[e] / l);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int batch, int heads, int seq_len,
                      int head_dim) {
    int rows = batch * heads * seq_len, warps = 4, blocks = (rows + warps - 1) / warps;
    if (head_dim == 64)
        warp_per_query<64><<<blocks, 32 * warps>>>(Q, K, V, O, rows, seq_len);
    else if (head_dim == 128)
        warp_per_query<128><<<blocks, 32 * warps>>>(Q, K, V, O, rows, seq_len);
}
