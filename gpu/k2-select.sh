#!/usr/bin/env bash
# Times the candidate kernels of row_topk and spmv_csr against their references
# and library rows at the official size (one `harness bench` run per challenge,
# so baseline and candidates share a process's copy-bandwidth measurement), and
# profiles the predicted best candidate of each under Nsight Compute.
# Writes to $OUT/k2-select/: environment.txt, install.log, row_topk.json,
# spmv_csr.json, prof_row_topk.txt, prof_spmv_csr.txt. About 2 minutes; every
# step runs under a timeout (4 minutes at most in all).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/k2-select"
mkdir -p "$DEST"
GPU="${GPU:-0}"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DEST/environment.txt" 2>&1
make install > "$DEST/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
H=.venv/bin/harness

timeout 70 "$H" bench row_topk reference/row_topk.cu \
  solutions/row_topk/tight_threshold.cu solutions/row_topk/tight_threshold_prefetch.cu \
  solutions/row_topk/prefetch_sorted_pool.cu solutions/row_topk/bitmask_append.cu solutions/row_topk/library.py \
  --budget 1 --no-history --json --gpu "$GPU" > "$DEST/row_topk.json" 2>> "$DEST/environment.txt"
echo "row_topk bench: exit $?" >> "$DEST/environment.txt"

timeout 70 "$H" bench spmv_csr reference/spmv_csr.cu \
  solutions/spmv_csr/entry_tiles_segmented.cu solutions/spmv_csr/entry_tiles_transposed.cu \
  solutions/spmv_csr/entry_tiles_transposed_16.cu solutions/spmv_csr/library.py \
  --budget 1 --no-history --json --gpu "$GPU" > "$DEST/spmv_csr.json" 2>> "$DEST/environment.txt"
echo "spmv_csr bench: exit $?" >> "$DEST/environment.txt"

# the Nsight Compute reports themselves stay on the device (-o): only the tables come back
timeout 45 "$H" profile row_topk solutions/row_topk/bitmask_append.cu \
  -o /tmp/k2-select-row_topk.ncu-rep --timeout 40 --gpu "$GPU" > "$DEST/prof_row_topk.txt" 2>&1
echo "row_topk profile: exit $?" >> "$DEST/environment.txt"
timeout 45 "$H" profile spmv_csr solutions/spmv_csr/entry_tiles_transposed.cu \
  -o /tmp/k2-select-spmv_csr.ncu-rep --timeout 40 --gpu "$GPU" > "$DEST/prof_spmv_csr.txt" 2>&1
echo "spmv_csr profile: exit $?" >> "$DEST/environment.txt"
