// Times calls of reference/mamba3_scan_backward.cu, or of a copy of it that
// reference/mamba3_scan_bounds.py has patched (a part of its memory traffic or work taken away) and
// put beside this file, at the official size (2, 4096, 16, 64, 64): one line, print_call_times'
// (reference/phase_stamps.cuh). The copies' outputs are wrong by design; only their times mean
// something.
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_backward_bounds.cu -o /tmp/bounds && /tmp/bounds base
#include "mamba3_scan_backward.cu"

#undef PHASE_AT
#include "phase_stamps.cuh"

int main(int argc, char** argv) {
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64;
    const Mamba3Inputs in = mamba3_inputs(batch, T, H, P, N);
    const Mamba3Gradients gr = mamba3_gradients(batch, T, H, P, N);
    return print_call_times(argc > 1 ? argv[1] : "base", [&] {
        solve(in.x, in.B, in.C, in.dt, in.A, in.lam, in.theta, in.skip, gr.dy, gr.dx, gr.dB, gr.dC, gr.ddt, gr.dA,
              gr.dlam, gr.dtheta, gr.dskip, batch, T, H, P, N);
    });
}
