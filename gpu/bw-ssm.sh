#!/usr/bin/env bash
# ssm_selective_scan_backward candidates against the reference, and the forward
# reference's median (the 2x target's baseline), in one H200 session (under
# 5 minutes: each step has its own timeout). Writes:
#   $OUT/bw.json        harness bench of the backward reference and the two candidates
#   $OUT/bw_sub8.json   the decays-in-shared candidate with -DSUB=8 (36 KB of shared memory)
#   $OUT/fw.json        harness bench of the forward reference
#   $OUT/profile.json   harness profile (Nsight Compute) of the decays-in-shared candidate
#   $OUT/summary.txt    environment and exit codes
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  git rev-parse HEAD
} > "$OUT/summary.txt" 2>&1
make install > /dev/null 2>&1 || { echo "make install failed" >> "$OUT/summary.txt"; exit 1; }
H=.venv/bin/harness
NAME=ssm_selective_scan_backward
SOL=solutions/$NAME
timeout 140 $H bench $NAME reference/$NAME.cu $SOL/subchunk_decays_in_shared.cu $SOL/subchunk_recompute_decays.cu \
  --budget 1 --no-history --json > "$OUT/bw.json" 2> "$OUT/bw.err"
echo "bench backward: exit $?" >> "$OUT/summary.txt"
timeout 45 $H bench ssm_selective_scan reference/ssm_selective_scan.cu --budget 1 --no-history --json \
  > "$OUT/fw.json" 2> /dev/null
echo "bench forward: exit $?" >> "$OUT/summary.txt"
timeout 50 $H bench $NAME $SOL/subchunk_decays_in_shared.cu --nvcc-flags "-O3 -DSUB=8" --no-baseline \
  --budget 1 --no-history --json > "$OUT/bw_sub8.json" 2> /dev/null
echo "bench backward SUB=8: exit $?" >> "$OUT/summary.txt"
timeout 55 $H profile $NAME $SOL/subchunk_decays_in_shared.cu -o /tmp/bw-ssm.ncu-rep --json \
  > "$OUT/profile.json" 2> /dev/null
echo "profile: exit $?" >> "$OUT/summary.txt"
