// Where a block of reference/mamba3_scan.cu spends its life on the GPU: the reference, unchanged,
// with a %globaltimer stamp at its PHASE_AT(k, t) marks (reference/phase_stamps.cuh), at the
// official size (2, 4096, 16, 64, 64). Prints the median time of a call over 25 calls (L2 flushed
// before each), then for one call, per phase, the mean, median and 90th percentile over the
// blocks, and the blocks' lives summed per SM.
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_phases.cu -o /tmp/phases && /tmp/phases
#include "phase_stamps.cuh"
#include "mamba3_scan.cu"

int main() {
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64;
    const Mamba3Inputs in = mamba3_inputs(batch, T, H, P, N);
    float* y = filled_on_device((size_t)batch * T * H * P, 0.f, 0.f, 0);
    const long long blocks = (long long)batch * H * ((T + L - 1) / L);  // one column tile per head here
    unsigned long long* log = phase_log_for(blocks);

    auto call = [&] { solve(in.x, in.B, in.C, in.dt, in.A, in.lam, in.theta, in.skip, y, batch, T, H, P, N); };
    const float whole = median_us(call);
    clear_phases(log, blocks);
    flush_l2();
    call();  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::printf("call median %.1f us (%lld blocks); lives summed per SM %.1f us (3 blocks per SM)\n", whole, blocks,
                life_per_sm(log, blocks, 0, 8));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "state update, published", "scores",
                               "W X (warp 0's tiles)", "look-back, inclusive state published", "G stored",
                               "read-out, y stored"});
    return 0;
}
