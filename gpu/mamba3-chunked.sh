#!/usr/bin/env bash
# mamba3_scan chunked candidate on the H200: timing against the reference in one
# run, correctness of every test at full size on the GPU, compute-sanitizer, and
# an Nsight Compute profile. Everything goes to $OUT/mamba3-chunked/; the timeouts
# keep the whole run under 3 minutes after `make install`.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DIR="$OUT/mamba3-chunked"
mkdir -p "$DIR"
GPU="${GPU:-0}"
CAND=solutions/mamba3_scan/chunked_3xtf32.cu
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader -i "$GPU"
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DIR/environment.txt" 2>&1
make install > "$DIR/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
H=.venv/bin/harness
nvcc -O3 -arch=sm_90a -Xptxas -v -c "$CAND" -o /dev/null > "$DIR/ptxas.txt" 2>&1
timeout 60 "$H" bench mamba3_scan reference/mamba3_scan.cu "$CAND" --budget 1 --no-history --gpu "$GPU" --json \
  > "$DIR/bench.json" 2> "$DIR/bench.log"
echo "bench: exit $?" | tee -a "$DIR/summary.txt"
timeout 30 "$H" check mamba3_scan "$CAND" --gpu "$GPU" -v > "$DIR/check.txt" 2>&1
echo "check: exit $?" | tee -a "$DIR/summary.txt"
timeout 35 "$H" check mamba3_scan "$CAND" --gpu "$GPU" --sanitize > "$DIR/sanitize.txt" 2>&1
echo "sanitize: exit $?" | tee -a "$DIR/summary.txt"
timeout 35 "$H" profile mamba3_scan "$CAND" --gpu "$GPU" --json -o "$DIR/chunked_3xtf32.ncu-rep" \
  > "$DIR/prof.json" 2> "$DIR/prof.log"
echo "profile: exit $?" | tee -a "$DIR/summary.txt"
