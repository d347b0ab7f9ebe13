// One thread per query row, the textbook three steps: the row maximum of the
// scores, then the sum of exp(score - max) and the weighted sum of V rows in
// the same pass, then a division. float32 throughout; the query row and the
// output accumulator live in (mostly local) per-thread arrays. Threads of a
// warp hold consecutive queries and read the same key row at the same time.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

template <int D>
__global__ void attention_row(const half* Q, const half* K, const half* V, half* O, int rows, int seq_len) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;  // r = (batch*heads + bh)*seq_len + i
    if (r >= rows) return;
    int i = r % seq_len;
    size_t base = (size_t)(r - i) * D;  // this (batch, head)'s matrices
    const half* k = K + base;
    const half* v = V + base;
    float scale = 1.0f / sqrtf((float)D);
    float q[D], acc[D];
    for (int d = 0; d < D; d++) {
        q[d] = __half2float(Q[(size_t)r * D + d]) * scale;
        acc[d] = 0.0f;
    }
    float row_max = -INFINITY;
    for (int j = 0; j <= i; j++) {  // causal: keys 0..i
        float s = 0.0f;
        for (int d = 0; d < D; d++) s += q[d] * __half2float(k[(size_t)j * D + d]);
        row_max = fmaxf(row_max, s);
    }
    float sum = 0.0f;
    for (int j = 0; j <= i; j++) {
        float s = 0.0f;
        for (int d = 0; d < D; d++) s += q[d] * __half2float(k[(size_t)j * D + d]);
        float p = expf(s - row_max);
        sum += p;
        for (int d = 0; d < D; d++) acc[d] += p * __half2float(v[(size_t)j * D + d]);
    }
    for (int d = 0; d < D; d++) O[(size_t)r * D + d] = __float2half(acc[d] / sum);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int batch, int heads, int seq_len,
                      int head_dim) {
    int rows = batch * heads * seq_len, threads = 128, blocks = (rows + threads - 1) / threads;
    if (head_dim == 64)
        attention_row<64><<<blocks, threads>>>(Q, K, V, O, rows, seq_len);
    else if (head_dim == 128)
        attention_row<128><<<blocks, threads>>>(Q, K, V, O, rows, seq_len);
}
