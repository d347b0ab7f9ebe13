// Where a block of each kernel of reference/mamba3_scan_backward.cu spends its life on the GPU:
// the reference, unchanged, with a %globaltimer stamp at its PHASE_AT(k, t) marks
// (reference/phase_stamps.cuh), at the official size (2, 4096, 16, 64, 64). Prints the median
// time of a call over 25 calls (L2 flushed before each), then for one call, per kernel and phase,
// the mean, median and 90th percentile over the blocks, the blocks' lives summed per SM, and the
// call's timeline (print_timeline).
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_backward_phases.cu -o /tmp/phases && /tmp/phases
#include "phase_stamps.cuh"
#include "mamba3_scan_backward.cu"

// The call's timeline from the same stamps: when each kernel's blocks begin and end, and per 20 us
// of the call how many blocks of each are alive (a state block from its start to its publication,
// a gradient block from its ticket to warp 0's or thread 32's end), and how many gradient blocks
// sit between their Q and D tiles and the end of their look-back (the wait for the carry kernel is
// in that span). The carry kernel has no stamps: it runs between the state kernel's end and the
// gradient blocks' begin.
inline void print_timeline(const std::vector<unsigned long long>& s, long long blocks) {
    auto at = [&](long long b, int k) { return s[(size_t)b * PHASE_SLOTS + k]; };
    unsigned long long t0 = ~0ull, state_end = 0, grad_begin = ~0ull, grad_end = 0;
    for (long long b = 0; b < blocks; ++b) {
        t0 = std::min({t0, at(b, 11), at(b, 0)});
        state_end = std::max(state_end, at(b, 14));
        grad_begin = std::min(grad_begin, at(b, 0));
        grad_end = std::max({grad_end, at(b, 9), at(b, 10)});
    }
    auto us = [&](unsigned long long t) { return (double)(long long)(t - t0) / 1000.0; };
    std::printf("\ntimeline from the first stamp: state kernel ends %.1f us; gradient blocks begin %.1f, end %.1f us\n",
                us(state_end), us(grad_begin), us(grad_end));
    std::printf("%-12s %12s %15s %24s\n", "window (us)", "state alive", "gradient alive", "gradient in Q,D -> look-back end");
    const unsigned long long step = 20000;
    for (unsigned long long w = t0; w < grad_end; w += step) {
        double st = 0, gr = 0, wt = 0;  // block-time inside the window, over the window: mean blocks alive
        auto overlap = [&](unsigned long long a, unsigned long long e) {
            if (!a || !e || e <= a) return 0.0;
            const unsigned long long lo = std::max(a, w), hi = std::min(e, w + step);
            return hi > lo ? (double)(hi - lo) / step : 0.0;
        };
        for (long long b = 0; b < blocks; ++b) {
            st += overlap(at(b, 11), at(b, 14));
            gr += overlap(at(b, 0), std::max(at(b, 9), at(b, 10)));
            wt += overlap(at(b, 4), at(b, 5) ? at(b, 5) : at(b, 6));
        }
        std::printf("%5.0f-%-6.0f %12.1f %15.1f %24.1f\n", us(w), us(w) + step / 1000.0, st, gr, wt);
    }
}

int main() {
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64;
    const Mamba3Inputs in = mamba3_inputs(batch, T, H, P, N);
    const Mamba3Gradients gr = mamba3_gradients(batch, T, H, P, N);
    const long long blocks = (long long)batch * H * ((T + L - 1) / L);  // per kernel: (head, chunk)
    unsigned long long* log = phase_log_for(blocks);

    auto call = [&] {
        solve(in.x, in.B, in.C, in.dt, in.A, in.lam, in.theta, in.skip, gr.dy, gr.dx, gr.dB, gr.dC, gr.ddt, gr.dA,
              gr.dlam, gr.dtheta, gr.dskip, batch, T, H, P, N);
    };
    const float whole = median_us(call);
    clear_phases(log, blocks);
    flush_l2();
    call();  // the call whose phases are printed
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("CUDA error\n"), 1;

    std::printf("call median %.1f us (%lld blocks per kernel)\n\n", whole, blocks);
    std::printf("state kernel (3 blocks per SM at this size): lives summed per SM %.1f us\n",
                life_per_sm(log, blocks, 11, 14));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "Agg product, published"}, 11);
    std::printf("\ngradient kernel (2 blocks per SM at this size): lives summed per SM %.1f us (to warp 0's end)\n",
                life_per_sm(log, blocks, 0, 9));
    print_phases(log, blocks, {"inputs staged", "decays, angles, rotation", "BAgg product, published",
                               "Q and D (warp 0's tiles)", "look-back (waits for Q, D)", "chunk end, alpha_t0 part",
                               "dx", "dCr and Gx, dB and dC", "per-step scalars (warp 0)"});
    // thread 32 walks dtheta while warp 0 forms the scalars: from the same stamp to thread 32's
    const std::vector<unsigned long long> stamps = read_stamps(log, blocks);
    print_span(stamps, blocks, "dtheta (thread 32), same start", 8, 10);
    print_timeline(stamps, blocks);
    return 0;
}
