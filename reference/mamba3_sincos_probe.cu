// The error of sin and cos by the MUFU, as the mamba3 kernels would use them, against sincosf (what
// both mamba3 references use). The candidate reduces an angle to [-pi, pi] by rintf(x / 2 pi) and two
// FMAs, then calls __sincosf (7 SASS instructions where sincosf's fast path takes about 30). The
// references multiply every step's rotation into a running one, so what matters is a bias that adds up
// over thousands of steps, not the bound of one call: emu computes __sincosf with the host's accurate
// functions and cannot show it.
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_sincos_probe.cu -o /tmp/sincos && /tmp/sincos
//
// For each angle distribution of the tests (challenges/mamba3_scan/spec.md, "Input distributions"),
// 65,536 chains of 4,096 steps, one thread each: the step's angle drawn, its sin and cos by each
// method, the rotation multiplied into the running one in float as the kernels do, and in double the
// exact rotation's. Per call, the signed error splits into its tangential part (an angle error, rad)
// and its radial part (a length error). Printed: their means over all calls (a bias), the mean |angle
// error|, and at the end of the chains the mean signed and mean absolute angle and length errors of
// the running rotation.
#include <cuda_runtime.h>

#include <cstdio>

enum Method { ACCURATE, MUFU };

__device__ __forceinline__ void sincos_mufu(float x, float* s, float* c) {
    const float k = rintf(x * 0.159154943091895336f);
    float r = fmaf(-k, 6.28318548202514648f, x);
    r = fmaf(-k, -1.74845553146951e-7f, r);
    __sincosf(r, s, c);
}

// splitmix64, one counter per thread: a uniform draw in [0, 1) with 24 random bits
__device__ float uniform01(unsigned long long* state) {
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (float)((z ^ (z >> 31)) >> 40) * 0x1p-24f;
}

constexpr int DISTRIBUTIONS = 4;
const char* const DISTRIBUTION_NAMES[DISTRIBUTIONS] = {"long_memory U(-0.1, 0.1)", "moderate U(-1, 1)",
                                                       "large_angles U(-100, 100)", "mamba_like dt U(-10, 10)"};

__device__ float draw_angle(unsigned long long* state, int distribution) {
    const float u = 2.f * uniform01(state) - 1.f;
    switch (distribution) {
        case 0: return 0.1f * u;
        case 1: return u;
        case 2: return 100.f * u;
        default: {  // dt log-uniform in [1e-3, 1e-1]
            const float dt = expf(logf(1e-3f) + uniform01(state) * (logf(1e-1f) - logf(1e-3f)));
            return dt * 10.f * u;
        }
    }
}

// the error of (s, c) against the exact (es, ec), split into its part along the unit circle (an angle
// error, rad) and its part across it (a length error)
__device__ __forceinline__ void split_error(double s, double c, double es, double ec, double* angle, double* length) {
    *angle = s * ec - c * es;
    *length = s * es + c * ec - 1.0;
}

// sums over every call, then over every chain's end: signed angle, signed length, |angle| (per call);
// signed angle, signed length, |angle|, |length| (chain ends)
constexpr int SUMS = 7;

__global__ void chains(int distribution, Method method, int steps, double* sums) {
    const int chain = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long state = 0x243f6a8885a308d3ull * (unsigned long long)(chain + 1);
    float run_c = 1.f, run_s = 0.f;
    double total_angle = 0.0, call_angle = 0.0, call_length = 0.0, call_abs_angle = 0.0;
    for (int t = 0; t < steps; ++t) {
        const float x = draw_angle(&state, distribution);
        float s, c;
        if (method == MUFU) sincos_mufu(x, &s, &c);
        else sincosf(x, &s, &c);
        double es, ec;
        sincos((double)x, &es, &ec);
        double angle_error, length_error;
        split_error(s, c, es, ec, &angle_error, &length_error);
        call_angle += angle_error;
        call_length += length_error;
        call_abs_angle += fabs(angle_error);
        const float next_c = run_c * c - run_s * s, next_s = run_c * s + run_s * c;
        run_c = next_c;
        run_s = next_s;
        total_angle += (double)x;
    }
    double es, ec;
    sincos(total_angle, &es, &ec);
    double angle_error, length_error;
    split_error(run_s, run_c, es, ec, &angle_error, &length_error);
    const double mine[SUMS] = {call_angle,   call_length,  call_abs_angle,    angle_error,
                               length_error, fabs(angle_error), fabs(length_error)};
    for (int i = 0; i < SUMS; ++i) atomicAdd(&sums[i], mine[i]);
}

int main() {
    constexpr int STEPS = 4096, CHAINS = 1 << 16, THREADS = 256;
    double* sums = nullptr;
    if (cudaMalloc(&sums, SUMS * sizeof(double)) != cudaSuccess) return 1;
    printf("%-26s %-8s | per call: angle bias, length bias, mean |angle| | after %d steps: angle, length, "
           "mean |angle|, mean |length|\n",
           "angles", "method", STEPS);
    for (int d = 0; d < DISTRIBUTIONS; ++d) {
        for (Method method : {ACCURATE, MUFU}) {
            cudaMemset(sums, 0, SUMS * sizeof(double));
            chains<<<CHAINS / THREADS, THREADS>>>(d, method, STEPS, sums);
            double h[SUMS];
            cudaError_t error = cudaGetLastError();  // the launch's own error, then the kernel's
            if (error == cudaSuccess) error = cudaMemcpy(h, sums, sizeof h, cudaMemcpyDeviceToHost);
            if (error != cudaSuccess) {
                fprintf(stderr, "%s\n", cudaGetErrorString(error));
                cudaFree(sums);
                return 1;
            }
            const double calls = (double)CHAINS * STEPS;
            printf("%-26s %-8s | %+.2e %+.2e %.2e | %+.2e %+.2e %.2e %.2e\n", DISTRIBUTION_NAMES[d],
                   method == MUFU ? "mufu" : "sincosf", h[0] / calls, h[1] / calls, h[2] / calls, h[3] / CHAINS,
                   h[4] / CHAINS, h[5] / CHAINS, h[6] / CHAINS);
        }
    }
    cudaFree(sums);
    return 0;
}
