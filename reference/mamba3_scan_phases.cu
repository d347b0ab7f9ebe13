// Where a block of reference/mamba3_scan.cu spends its life on the GPU: the reference, unchanged,
// with a %globaltimer stamp at its PHASE_AT(k, t) marks and its ticket and walk depth at its
// PHASE_VALUE(k, v) marks (reference/phase_stamps.cuh), at the official size (2, 4096, 16, 64, 64).
// Prints the median time of a call over 25 calls (L2 flushed before each), then for one call, per
// phase, the mean, median and 90th percentile over the blocks, the blocks' lives summed per SM,
// and the look-back's parts: how far each walk went and when the chunk before was flagged.
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_phases.cu -o /tmp/phases && /tmp/phases
#include "phase_stamps.cuh"
#include "mamba3_scan.cu"

#include <map>

// Stamps 0..8 are the phases; 9: the last look-back window's flags read; 10: the walk done;
// 11: chunks walked; 12: ticket + 1.
constexpr int FLAGS_READ = 9, WALKED = 10, DEPTH = 11, TICKET = 12;

// The look-back of chunk c against chunk c - 1 of the same unit (tickets run chunk-major).
void print_lookback(const std::vector<unsigned long long>& s, long long blocks, int units) {
    std::vector<long long> block_of(blocks);  // ticket -> block
    for (long long b = 0; b < blocks; ++b) block_of[s[b * PHASE_SLOTS + TICKET] - 1] = b;
    auto stamp = [&](long long ticket, int k) { return (double)s[block_of[ticket] * PHASE_SLOTS + k]; };
    std::map<int, int> depths;
    double depth_sum = 0.0;
    long long walks = 0, aggregate_ready = 0, inclusive_ready = 0;
    for (long long ticket = units; ticket < blocks; ++ticket) {
        const long long before = ticket - units;  // chunk c - 1; chunk 0 flags INCLUSIVE at stamp 3
        const double begins = stamp(ticket, 5);
        aggregate_ready += stamp(before, 3) <= begins;
        inclusive_ready += stamp(before, before < units ? 3 : 6) <= begins;
        const int d = (int)s[block_of[ticket] * PHASE_SLOTS + DEPTH];
        ++depths[d], depth_sum += d, ++walks;
    }
    print_span(s, blocks, "look-back begins -> flags read", 5, FLAGS_READ);
    print_span(s, blocks, "-> walk done", FLAGS_READ, WALKED);
    print_span(s, blocks, "-> inclusive state published", WALKED, 6);
    std::printf("when a look-back began, chunk c-1 had flagged AGGREGATE in %.1f %% and INCLUSIVE in %.1f %% of "
                "%lld walks; chunks walked: mean %.2f,",
                100.0 * aggregate_ready / walks, 100.0 * inclusive_ready / walks, walks, depth_sum / walks);
    for (const auto& [d, n] : depths) std::printf(" %d: %d", d, n);
    std::printf("\n");
}

int main() {
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64;
    const Mamba3Inputs in = mamba3_inputs(batch, T, H, P, N);
    float* y = filled_on_device((size_t)batch * T * H * P, 0.f, 0.f, 0);
    const int units = batch * H;  // one column tile per head here
    const long long blocks = (long long)units * ((T + L - 1) / L);
    unsigned long long* log = phase_log_for(blocks);

    auto call = [&] { solve(in.x, in.B, in.C, in.dt, in.A, in.lam, in.theta, in.skip, y, batch, T, H, P, N); };
    const float whole = median_us(call);
    clear_phases(log, blocks);
    flush_l2();
    call();  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::printf("call median %.1f us (%lld blocks); lives summed per SM %.1f us\n", whole, blocks,
                life_per_sm(log, blocks, 0, 8));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "state update, published", "scores",
                               "W X (warp 0's tiles)", "look-back, inclusive state published", "G stored",
                               "read-out, y stored"});
    print_lookback(read_stamps(log, blocks), blocks, units);
    return 0;
}
