#!/usr/bin/env bash
# spmv_csr: the reference against the two persistent cp.async candidates.
# Writes under "$OUT/r2-spmv/":
#   spmv_csr.json  harness bench of reference/spmv_csr.cu and the candidates
#   log.txt        the GPU, nvcc, the commit, make install's output, exit codes
# Runs from the repository root on one GPU ("${GPU:-0}"); under 2 minutes
# (most of it the first preparation of the official-size float64 test data).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/r2-spmv"
mkdir -p "$DEST"
LOG="$DEST/log.txt"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; nvcc --version | tail -1; git rev-parse HEAD; } > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed" | tee -a "$LOG"; exit 1; }
H=.venv/bin/harness
G="${GPU:-0}"
D=solutions/spmv_csr

# the bench gets what is left of 115 s from the start (make install included)
LIMIT=$((115 - SECONDS)); (( LIMIT < 10 )) && LIMIT=10
timeout "$LIMIT" "$H" bench spmv_csr reference/spmv_csr.cu \
  "$D/persistent_cp_async.cu" "$D/persistent_cp_async_small_tiles.cu" \
  --budget 1 --no-history --json --gpu "$G" > "$DEST/spmv_csr.json" 2>> "$LOG"
echo "bench spmv_csr: exit $?" >> "$LOG"
