#!/usr/bin/env bash
# H200 measurements for mamba3_scan_backward; writes everything under $OUT; < 5 minutes.
#   1. harness run of the challenge: naive and reference checked and timed at the
#      official size (the reference is also the baseline). naive takes seconds per
#      call (every state of every column goes through memory, sums over columns are
#      atomics), hence --budget 1 --min-samples 3.
#   2. harness bench of the FORWARD reference, in the same run: the baseline of the
#      target (backward median <= 2x forward median).
#   3. compute-sanitizer (memcheck, racecheck, initcheck) on the reference, functional tests.
# Each step has its own time limit, so a slow step cannot take the others down.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?set OUT}"
make install > "$OUT/install.log" 2>&1 || { echo "make install failed" > "$OUT/FAILED"; exit 1; }
H=.venv/bin/harness
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.csv" 2>&1

step() {  # step NAME SECONDS COMMAND...: stdout to NAME.json, stderr to NAME.err, wall time and exit status to steps.txt
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
    echo "$name rc=$? wall_s=$((SECONDS - start))" >> "$OUT/steps.txt"
}

step mamba3_scan_backward 170 $H run mamba3_scan_backward --budget 1 --min-samples 3 --json
step mamba3_scan_forward_reference 50 $H bench mamba3_scan reference/mamba3_scan.cu --budget 2 --json
step sanitize_reference 60 $H check mamba3_scan_backward reference/mamba3_scan_backward.cu --sanitize --json
