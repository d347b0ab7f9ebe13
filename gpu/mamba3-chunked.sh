#!/usr/bin/env bash
# mamba3_scan chunked candidates on the H200: timing against the reference in one
# run, correctness of every test at full size on the GPU, compute-sanitizer, and
# an Nsight Compute profile. Everything goes to $OUT/mamba3-chunked/. Every GPU step
# runs under a timeout cut to what is left of a 170 s deadline (after `make install`),
# so the whole run stays under 3 minutes; a step cut short says so in summary.txt.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DIR="$OUT/mamba3-chunked"
mkdir -p "$DIR"
GPU="${GPU:-0}"
CHUNKED=solutions/mamba3_scan/chunked_3xtf32.cu
LOOKBACK=solutions/mamba3_scan/chunk_parallel_lookback.cu
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader -i "$GPU"
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DIR/environment.txt" 2>&1
make install > "$DIR/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
H=.venv/bin/harness
DEADLINE=$((SECONDS + 170))

# step NAME CAP COMMAND...: COMMAND under a timeout of min(CAP, time left), exit status logged
step() {
  local name=$1 cap=$2 left=$((DEADLINE - SECONDS))
  shift 2
  if ((left < 5)); then echo "$name: not run (deadline)" | tee -a "$DIR/summary.txt"; return; fi
  timeout $((cap < left ? cap : left)) "$@"
  echo "$name: exit $?" | tee -a "$DIR/summary.txt"
}

# register and shared-memory report of both candidates (CPU only, alongside the GPU steps)
nvcc -O3 -arch=sm_90a -Xptxas -v -c "$CHUNKED" -o /dev/null > "$DIR/ptxas_chunked.txt" 2>&1 &
PTXAS1=$!
nvcc -O3 -arch=sm_90a -Xptxas -v -c "$LOOKBACK" -o /dev/null > "$DIR/ptxas_lookback.txt" 2>&1 &
PTXAS2=$!

step bench 70 "$H" bench mamba3_scan reference/mamba3_scan.cu "$CHUNKED" "$LOOKBACK" --budget 1 --no-history \
  --gpu "$GPU" --json > "$DIR/bench.json" 2> "$DIR/bench.log"
step check 35 "$H" check mamba3_scan "$CHUNKED" "$LOOKBACK" --gpu "$GPU" -v > "$DIR/check.txt" 2>&1
step sanitize_lookback 35 "$H" check mamba3_scan "$LOOKBACK" --gpu "$GPU" --sanitize > "$DIR/sanitize_lookback.txt" 2>&1
step profile_lookback 30 "$H" profile mamba3_scan "$LOOKBACK" --gpu "$GPU" --json \
  -o "$DIR/chunk_parallel_lookback.ncu-rep" > "$DIR/prof_lookback.json" 2> "$DIR/prof_lookback.log"
step sanitize_chunked 30 "$H" check mamba3_scan "$CHUNKED" --gpu "$GPU" --sanitize > "$DIR/sanitize_chunked.txt" 2>&1
wait "$PTXAS1" "$PTXAS2"
