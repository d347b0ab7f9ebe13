// Where a block of each kernel of reference/mamba3_scan_backward.cu spends its life on the GPU:
// the reference, unchanged, with a %globaltimer stamp at its PHASE_AT(k, t) marks
// (reference/phase_stamps.cuh), at the official size (2, 4096, 16, 64, 64). Prints the median
// time of a call over 25 calls (L2 flushed before each), then for one call, per kernel and phase,
// the mean, median and 90th percentile over the blocks, and the blocks' summed lives per SM
// (at one block per SM at a time, near the kernel's time; at k blocks per SM, k times it).
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_backward_phases.cu -o /tmp/phases && /tmp/phases
#include "phase_stamps.cuh"
#include "mamba3_scan_backward.cu"

namespace {

// Deterministic inputs in the challenge's ranges (dt > 0, A < 0, lam in [0, 1]).
std::vector<float> filled(size_t n, float lo, float hi, unsigned seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        const unsigned h = ((unsigned)i + seed * 0x9e3779b9u) * 2654435761u;
        v[i] = lo + (hi - lo) * (float)(h >> 8) / 16777216.0f;
    }
    return v;
}

float* on_device(const std::vector<float>& v) {
    float* d = nullptr;
    cudaMalloc(&d, v.size() * sizeof(float));
    cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
    return d;
}

// The summed lives of the blocks whose stamps first and last are both set, per SM, in us.
double life_per_sm(const unsigned long long* log, long long blocks, int first, int last) {
    std::vector<unsigned long long> s((size_t)blocks * PHASE_SLOTS);
    cudaMemcpy(s.data(), log, s.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (long long b = 0; b < blocks; ++b) {
        const unsigned long long from = s[(size_t)b * PHASE_SLOTS + first], to = s[(size_t)b * PHASE_SLOTS + last];
        if (from && to) sum += (double)(long long)(to - from) / 1000.0;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    return sum / sms;
}

}  // namespace

int main() {
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64;
    const size_t rows = (size_t)batch * T * H;
    float* x = on_device(filled(rows * P, -1.f, 1.f, 1));
    float* B = on_device(filled(rows * N, -1.f, 1.f, 2));
    float* C = on_device(filled(rows * N, -1.f, 1.f, 3));
    float* dt = on_device(filled(rows, 0.001f, 0.1f, 4));
    float* A = on_device(filled(H, -4.f, -0.5f, 5));
    float* lam = on_device(filled(rows, 0.f, 1.f, 6));
    float* theta = on_device(filled(rows * N / 2, -0.5f, 0.5f, 7));
    float* skip = on_device(filled(H, -1.f, 1.f, 8));
    float* dy = on_device(filled(rows * P, -1.f, 1.f, 9));
    float *dx = on_device(std::vector<float>(rows * P)), *dB = on_device(std::vector<float>(rows * N)),
          *dC = on_device(std::vector<float>(rows * N)), *ddt = on_device(std::vector<float>(rows)),
          *dA = on_device(std::vector<float>(H)), *dlam = on_device(std::vector<float>(rows)),
          *dtheta = on_device(std::vector<float>(rows * N / 2)), *dskip = on_device(std::vector<float>(H));
    const long long blocks = (long long)batch * H * ((T + L - 1) / L);  // per kernel: (head, chunk)
    unsigned long long* log = phase_log_for(blocks);

    auto call = [&] { solve(x, B, C, dt, A, lam, theta, skip, dy, dx, dB, dC, ddt, dA, dlam, dtheta, dskip, batch, T, H, P, N); };
    const float whole = median_us(call);
    clear_phases(log, blocks);
    flush_l2();
    call();  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::printf("call median %.1f us (%lld blocks per kernel)\n\n", whole, blocks);
    std::printf("state kernel (3 blocks per SM at this size): summed lives per SM %.1f us\n",
                life_per_sm(log, blocks, 11, 15));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "Agg product, published",
                               "look-back, Gin(c+1) published"},
                 11);
    std::printf("\ngradient kernel (1 block per SM at this size): summed lives per SM %.1f us (to warp 0's end)\n",
                life_per_sm(log, blocks, 0, 9));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "BAgg product, published",
                               "Q and D (warp 0's tiles)", "look-back (waits for Q, D)", "chunk end, alpha_t0 part",
                               "dx", "dCr and Gx, dB and dC", "per-step scalars (warp 0)"});
    // thread 32 walks dtheta while warp 0 forms the scalars: from the same stamp to thread 32's
    std::vector<unsigned long long> s((size_t)blocks * PHASE_SLOTS);
    cudaMemcpy(s.data(), log, s.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    std::vector<float> us;
    for (long long b = 0; b < blocks; ++b)
        us.push_back((float)(long long)(s[(size_t)b * PHASE_SLOTS + 10] - s[(size_t)b * PHASE_SLOTS + 8]) / 1000.0f);
    std::sort(us.begin(), us.end());
    std::printf("%-34s median %6.2f us  p90 %6.2f\n", "dtheta (thread 32), same start", us[us.size() / 2],
                us[us.size() * 9 / 10]);
    return 0;
}
