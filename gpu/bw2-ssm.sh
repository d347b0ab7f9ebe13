#!/usr/bin/env bash
# ssm_selective_scan_backward candidates against the reference, with the forward
# reference timed in the same run (the target: backward median <= 2x forward's):
#   $OUT/bw2-ssm/bw.json       harness bench: reference + the three candidates
#   $OUT/bw2-ssm/fwd.json      harness bench: reference/ssm_selective_scan.cu
#   $OUT/bw2-ssm/async_ring_chunks_lean.{json,csv,ncu-rep}  harness profile of the predicted fastest
#   $OUT/bw2-ssm/log.txt       environment, exit codes, stderr
# About 2-3 minutes on one H200. GPU index: $GPU (default 0).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
D="$OUT/bw2-ssm"
mkdir -p "$D"
LOG="$D/log.txt"
G="${GPU:-0}"
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader
  nvcc --version | tail -1
  git rev-parse HEAD
} > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed" >> "$LOG"; exit 1; }
H=.venv/bin/harness
S=solutions/ssm_selective_scan_backward
timeout 100 "$H" bench ssm_selective_scan_backward reference/ssm_selective_scan_backward.cu \
  "$S/async_ring_chunks.cu" "$S/async_ring_chunks_44.cu" "$S/async_ring_chunks_lean.cu" \
  --budget 1 --no-history --json --gpu "$G" > "$D/bw.json" 2>> "$LOG"
echo "bench backward: exit $?" >> "$LOG"
timeout 35 "$H" bench ssm_selective_scan reference/ssm_selective_scan.cu \
  --budget 1 --no-history --json --gpu "$G" > "$D/fwd.json" 2>> "$LOG"
echo "bench forward: exit $?" >> "$LOG"
timeout 75 "$H" profile ssm_selective_scan_backward "$S/async_ring_chunks_lean.cu" --gpu "$G" \
  -o "$D/async_ring_chunks_lean.ncu-rep" --json > "$D/async_ring_chunks_lean.json" 2>> "$LOG"
echo "profile async_ring_chunks_lean: exit $?" >> "$LOG"
