// Times one call of reference/mamba3_scan.cu, or of a copy of it that reference/mamba3_scan_bounds.py
// has patched (a part of its memory traffic or work taken away) and put beside this file, at the
// official size (2, 4096, 16, 64, 64): the L2 flushed before each of 80 calls, one line with the
// median and quartiles. The variants' outputs are wrong by design; only their times mean something.
//
//   nvcc -O3 -arch=sm_90 reference/mamba3_scan_bounds.cu -o /tmp/bounds && /tmp/bounds base
#include "mamba3_scan.cu"

#undef PHASE_AT
#undef PHASE_VALUE
#include "phase_stamps.cuh"

int main(int argc, char** argv) {
    const char* name = argc > 1 ? argv[1] : "base";
    const int batch = 2, T = 4096, H = 16, P = 64, N = 64, calls = 80;
    const Mamba3Inputs in = mamba3_inputs(batch, T, H, P, N);
    float* y = filled_on_device((size_t)batch * T * H * P, 0.f, 0.f, 0);
    auto call = [&] { solve(in.x, in.B, in.C, in.dt, in.A, in.lam, in.theta, in.skip, y, batch, T, H, P, N); };
    cudaEvent_t start, end;
    cudaEventCreate(&start), cudaEventCreate(&end);
    std::vector<float> us;
    for (int i = 0; i < calls + 3; ++i) {  // the first 3: warm-up
        flush_l2();
        cudaEventRecord(start);
        call();
        cudaEventRecord(end);
        cudaEventSynchronize(end);
        float ms;
        cudaEventElapsedTime(&ms, start, end);
        if (i >= 3) us.push_back(ms * 1000.0f);
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return std::printf("%s: CUDA error\n", name), 1;
    std::sort(us.begin(), us.end());
    std::printf("%s %.2f %.2f %.2f %zu\n", name, us[us.size() / 2], us[us.size() / 4], us[us.size() * 3 / 4],
                us.size());
    return 0;
}
