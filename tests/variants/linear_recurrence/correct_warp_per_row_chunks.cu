// expect: pass
// Independent correct design: one warp per row; each lane composes a 32-step block of the row, a shuffle scan carries states across lanes, then lanes rerun their steps.
#include <cuda_runtime.h>

__global__ void rec(const float* a, const float* x, float* h, int batch, int seq_len) {
    int b = blockIdx.x;
    int lane = threadIdx.x;
    const float* ar = a + (size_t)b * seq_len;
    const float* xr = x + (size_t)b * seq_len;
    float* hr = h + (size_t)b * seq_len;
    float carry = 0.0f;
    for (int base = 0; base < seq_len; base += 32 * 32) {
        int start = base + lane * 32, end = min(start + 32, seq_len);
        float p = 1.0f, s = 0.0f;
        for (int t = start; t < end; ++t) { p *= ar[t]; s = ar[t] * s + xr[t]; }
        // inclusive scan of (p, s) over lanes
        for (int o = 1; o < 32; o *= 2) {
            float pp = __shfl_up_sync(0xffffffffu, p, o), ps = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) { s = p * ps + s; p = pp * p; }
        }
        float ep = __shfl_up_sync(0xffffffffu, p, 1), es = __shfl_up_sync(0xffffffffu, s, 1);
        if (lane == 0) { ep = 1.0f; es = 0.0f; }
        float state = ep * carry + es;
        for (int t = start; t < end; ++t) { state = ar[t] * state + xr[t]; hr[t] = state; }
        carry = __shfl_sync(0xffffffffu, p, 31) * carry + __shfl_sync(0xffffffffu, s, 31);
    }
}

extern "C" void solve(const float* a, const float* x, float* h, int batch, int seq_len) {
    rec<<<batch, 32>>>(a, x, h, batch, seq_len);
}
