"""ssm_selective_scan in Python: a CuPy RawModule kernel, one warp per (batch,
channel). Lanes hold the states (lane n and n + 32), the sum over states is a
warp shuffle reduction, and lane 0 writes y. NVRTC compiles the kernel on
import; no nvcc needed."""

import cupy as cp

_SOURCE = r"""
extern "C" __global__ void scan(const float* u, const float* delta, const float* A, const float* B,
                                const float* C, const float* skip, float* y,
                                int batch, int seq_len, int d_model, int d_state) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= batch * d_model) return;  // whole warps leave together
    int b = warp / d_model, d = warp % d_model;
    bool has0 = lane < d_state, has1 = lane + 32 < d_state;
    float a0 = has0 ? A[d * d_state + lane] : 0.0f;
    float a1 = has1 ? A[d * d_state + lane + 32] : 0.0f;
    float h0 = 0.0f, h1 = 0.0f;
    for (int t = 0; t < seq_len; ++t) {
        size_t row = (size_t)b * seq_len + t;
        float dt = delta[row * d_model + d], x = u[row * d_model + d];
        float part = 0.0f;
        if (has0) {
            h0 = expf(dt * a0) * h0 + dt * B[row * d_state + lane] * x;
            part = C[row * d_state + lane] * h0;
        }
        if (has1) {
            h1 = expf(dt * a1) * h1 + dt * B[row * d_state + lane + 32] * x;
            part += C[row * d_state + lane + 32] * h1;
        }
        for (int offset = 16; offset > 0; offset /= 2) part += __shfl_down_sync(0xffffffffu, part, offset);
        if (lane == 0) y[row * d_model + d] = part + skip[d] * x;
    }
}
"""
_scan = cp.RawModule(code=_SOURCE).get_function("scan")
_THREADS = 128


def solve(u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state):
    warps = batch * d_model
    blocks = (warps * 32 + _THREADS - 1) // _THREADS
    _scan(
        (blocks,),
        (_THREADS,),
        (u, delta, A, B, C, skip, y, cp.int32(batch), cp.int32(seq_len), cp.int32(d_model), cp.int32(d_state)),
    )
