#!/usr/bin/env bash
# H200 measurements for mamba3_scan_backward; writes everything under $OUT; < 5 minutes.
#   1. harness bench of the backward reference at the official size (this also builds
#      and caches the float64 oracle's official data, about 20-60 s of CPU).
#   2. harness bench of the FORWARD reference, in the same run: the baseline of the
#      target (backward median <= 2x forward median).
#   3. harness run of the challenge: naive and reference checked on the functional
#      tests and timed at the official size. naive takes seconds per call (every state
#      of every column goes through memory, sums over columns are atomics), hence
#      --budget 1 --min-samples 3.
#   4. compute-sanitizer (memcheck, racecheck, initcheck) on the reference, functional tests.
# Each step gets its own limit, cut to what is left of 285 s, so a slow step cannot
# take the later ones down; steps.txt records each step's exit status and wall time.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?set OUT}"
DEADLINE=$((SECONDS + 285))
make install > "$OUT/install.log" 2>&1 || { echo "make install failed" > "$OUT/FAILED"; exit 1; }
H=.venv/bin/harness
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

step backward_reference_bench 150 $H bench mamba3_scan_backward reference/mamba3_scan_backward.cu --no-baseline --budget 3 --json
step forward_reference_bench 45 $H bench mamba3_scan reference/mamba3_scan.cu --no-baseline --budget 3 --json
step mamba3_scan_backward_run 90 $H run mamba3_scan_backward --budget 1 --min-samples 3 --json
step sanitize_reference 60 $H check mamba3_scan_backward reference/mamba3_scan_backward.cu --sanitize --json
