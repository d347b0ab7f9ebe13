#!/usr/bin/env bash
# mamba3_scan_backward candidates against the reference, and the forward
# reference (the 2x target's baseline) in the same run; then Nsight Compute
# per-kernel summaries of the reference and of the segment-parallel candidate
# (which kernel takes the time). Everything under $OUT (at most 6 files).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
H=.venv/bin/harness
S=solutions/mamba3_scan_backward
# about 95 s preparing the official-size oracle data, then 1 s of timed calls per solution
timeout 170 $H bench mamba3_scan_backward reference/mamba3_scan_backward.cu \
  $S/padded_reduction.cu $S/segment_parallel_carries.cu \
  --budget 1 --no-history --json > "$OUT/bw.json" 2> "$OUT/log.txt"
echo "bench backward: exit $?" >> "$OUT/log.txt"
timeout 40 $H bench mamba3_scan reference/mamba3_scan.cu --budget 1 --no-history --json > "$OUT/fw.json" 2>> "$OUT/log.txt"
echo "bench forward: exit $?" >> "$OUT/log.txt"
# per-kernel durations: the reference first (what its 4 ms are made of), then the candidate
timeout 35 $H profile mamba3_scan_backward reference/mamba3_scan_backward.cu -o /tmp/bwm_ref --json \
  > "$OUT/profile_ref.json" 2>> "$OUT/log.txt"
echo "profile reference: exit $?" >> "$OUT/log.txt"
timeout 25 $H profile mamba3_scan_backward $S/segment_parallel_carries.cu -o /tmp/bwm_seg --json \
  > "$OUT/profile_seg.json" 2>> "$OUT/log.txt"
echo "profile segment_parallel_carries: exit $?" >> "$OUT/log.txt"
