#!/usr/bin/env bash
# H200 measurements for ssm_selective_scan_backward; writes everything under $OUT; < 5 minutes.
#   1. harness bench of the backward reference at the official size (this also builds
#      and caches the float64 oracle's official data, 20-60 s of CPU).
#   2. harness bench of the FORWARD reference in the same run: the target's baseline
#      (backward median <= 2x forward median).
#   3. harness run of the challenge: naive and reference checked on the functional tests
#      and timed at the official size. naive allocates and frees 1.07 GB of scratch per
#      call and runs 2048 threads: milliseconds per call, hence --budget 1 --min-samples 3.
#   4. compute-sanitizer (memcheck, racecheck, initcheck) on the reference, functional tests.
#   5. the reference with chunks of 32 and 128 steps (-DTC=...), timed.
#   6. tests/variants/ssm_selective_scan_backward/*.cu checked on the GPU (the verdicts
#      on line 1 of each file).
#   7. Nsight Compute on one official-size call of the reference (its four kernels),
#      through a small driver built here; skipped when ncu is missing.
# Each step gets its own limit, cut to what is left of 285 s, so a slow step cannot
# take the later ones down; steps.txt records each step's exit status and wall time.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?set OUT}"
DEADLINE=$((SECONDS + 285))
make install > "$OUT/install.log" 2>&1 || { echo "make install failed" > "$OUT/FAILED"; exit 1; }
H=.venv/bin/harness
NAME=ssm_selective_scan_backward
REF=reference/$NAME.cu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.csv" 2>&1

step() {  # step NAME SECONDS COMMAND...: stdout to NAME.json, stderr to NAME.err
    local name=$1 limit=$2
    shift 2
    local left=$((DEADLINE - SECONDS))
    if [ "$left" -lt 10 ]; then
        echo "$name skipped: no time left" >> "$OUT/steps.txt"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local start=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
    echo "$name rc=$? limit_s=$limit wall_s=$((SECONDS - start))" >> "$OUT/steps.txt"
}

step backward_reference_bench 120 $H bench $NAME $REF --no-baseline --budget 3 --json
step forward_reference_bench 40 $H bench ssm_selective_scan reference/ssm_selective_scan.cu --no-baseline --budget 3 --json
step ${NAME}_run 60 $H run $NAME --budget 1 --min-samples 3 --json
step sanitize_reference 60 $H check $NAME $REF --sanitize --json
step reference_tc32_bench 20 $H bench $NAME $REF --no-baseline --budget 2 --nvcc-flags "-O3 -DTC=32" --json
step reference_tc128_bench 20 $H bench $NAME $REF --no-baseline --budget 2 --nvcc-flags "-O3 -DTC=128" --json
step variants_on_cuda 40 $H check $NAME tests/variants/$NAME/*.cu --json

# 7. Nsight Compute: one warm-up call, then one profiled call of the four kernels.
if command -v ncu > /dev/null && [ $((DEADLINE - SECONDS)) -gt 40 ]; then
    DRV=$(mktemp -d)
    cat > "$DRV/driver.cu" <<'CU'
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
extern "C" void solve(const float*, const float*, const float*, const float*, const float*, const float*,
                      const float*, float*, float*, float*, float*, float*, float*, int, int, int, int);
int main() {
    const int b = 4, L = 4096, D = 512, N = 16;  // the official size, moderate-like values
    const size_t bld = size_t(b) * L * D, bln = size_t(b) * L * N, dn = size_t(D) * N;
    const size_t sizes[13] = {bld, bld, dn, bln, bln, size_t(D), bld, bld, bld, dn, bln, bln, size_t(D)};
    float* p[13];
    unsigned s = 1;
    for (int i = 0; i < 13; ++i) {
        std::vector<float> h(sizes[i]);
        for (auto& v : h) {
            s = s * 1664525u + 1013904223u;
            const float r = (s >> 8) * (1.0f / 16777216.0f);  // [0, 1)
            v = i == 1 ? 0.01f + r : i == 2 ? -(0.01f + r) : 2.f * r - 1.f;  // delta > 0, A < 0
        }
        cudaMalloc(&p[i], sizes[i] * sizeof(float));
        cudaMemcpy(p[i], h.data(), sizes[i] * sizeof(float), cudaMemcpyHostToDevice);
    }
    for (int call = 0; call < 2; ++call)
        solve(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], b, L, D, N);
    const cudaError_t e = cudaDeviceSynchronize();
    std::printf("%s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
CU
    if nvcc -O3 -arch=sm_90 -o "$DRV/driver" "$DRV/driver.cu" "$REF" > "$OUT/ncu_build.log" 2>&1; then
        left=$((DEADLINE - SECONDS - 5))
        start=$SECONDS
        # the second call's four kernels (the first call is the warm-up)
        timeout "$left" ncu --set full -k regex:. -s 4 -c 4 -o "$OUT/${NAME}_reference" "$DRV/driver" \
            > "$OUT/ncu.log" 2>&1
        echo "ncu rc=$? limit_s=$left wall_s=$((SECONDS - start))" >> "$OUT/steps.txt"
        ncu --import "$OUT/${NAME}_reference.ncu-rep" --page details --csv > "$OUT/ncu_details.csv" 2>> "$OUT/ncu.log"
    else
        echo "ncu skipped: driver build failed" >> "$OUT/steps.txt"
    fi
    rm -rf "$DRV"
else
    echo "ncu skipped: no ncu or no time left" >> "$OUT/steps.txt"
fi
