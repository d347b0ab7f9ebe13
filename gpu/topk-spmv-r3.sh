#!/usr/bin/env bash
# Times the new row_topk and spmv_csr candidates against their references and
# library rows in one run per challenge, then profiles the favoured candidate
# of each under Nsight Compute. Writes to "$OUT/topk-spmv-r3/" (8 files):
#   environment.txt, install.log,
#   row_topk.json, spmv_csr.json     harness bench ... --budget 1 --no-history --json
#   row_topk_profile.json, spmv_csr_profile.json   harness profile ... --json
#   summary.txt, stderr.log          exit status of every step, and what the steps printed on stderr
# Runs from the repository root on one GPU ("${GPU:-0}"); about 2-3 minutes.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/topk-spmv-r3"
mkdir -p "$DEST"
GPU_INDEX="${GPU:-0}"
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DEST/environment.txt" 2>&1
make install > "$DEST/install.log" 2>&1 || { echo "make install failed (see install.log)" | tee -a "$DEST/summary.txt"; exit 1; }
H=.venv/bin/harness

timeout 75 "$H" bench row_topk reference/row_topk.cu \
  solutions/row_topk/cp_async_ranged_radix.cu solutions/row_topk/cp_async_ranged_radix_one_stage.cu \
  solutions/row_topk/library.py --budget 1 --no-history --json --gpu "$GPU_INDEX" > "$DEST/row_topk.json" 2>> "$DEST/stderr.log"
echo "bench row_topk: exit $?" >> "$DEST/summary.txt"

timeout 75 "$H" bench spmv_csr reference/spmv_csr.cu \
  solutions/spmv_csr/warp_tiles_prefetch.cu solutions/spmv_csr/warp_tiles_prefetch_16.cu \
  solutions/spmv_csr/library.py --budget 1 --no-history --json --gpu "$GPU_INDEX" > "$DEST/spmv_csr.json" 2>> "$DEST/stderr.log"
echo "bench spmv_csr: exit $?" >> "$DEST/summary.txt"

# ncu reports stay out of $OUT (only the JSON summaries come back)
PROFILES="$(mktemp -d)"
timeout 25 "$H" profile row_topk solutions/row_topk/cp_async_ranged_radix.cu --gpu "$GPU_INDEX" --timeout 22 \
  -o "$PROFILES/row_topk.ncu-rep" --json > "$DEST/row_topk_profile.json" 2>> "$DEST/stderr.log"
echo "profile row_topk: exit $?" >> "$DEST/summary.txt"
timeout 25 "$H" profile spmv_csr solutions/spmv_csr/warp_tiles_prefetch.cu --gpu "$GPU_INDEX" --timeout 22 \
  -o "$PROFILES/spmv_csr.ncu-rep" --json > "$DEST/spmv_csr_profile.json" 2>> "$DEST/stderr.log"
echo "profile spmv_csr: exit $?" >> "$DEST/summary.txt"
rm -rf "$PROFILES"
cat "$DEST/summary.txt"
