#!/usr/bin/env bash
# Times the look-back candidates of prefix_sum, linear_recurrence and
# stream_compaction beside their references at the official size (one
# `harness bench` per challenge, so each candidate's speedup and x-floor come
# from the same process as its baseline), then, if time is left, profiles the
# prefix_sum L2-prefetch candidate under Nsight Compute. Writes
# $OUT/lookback-r3/{environment.txt,install.log,<name>.json (3),bench.log,
# profile_prefix_sum.json,summary.txt}: 8 files. Runs on GPU ${GPU:-0}, in under
# 3 minutes.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/lookback-r3"
mkdir -p "$DEST"
START=$SECONDS
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DEST/environment.txt" 2>&1
make install > "$DEST/install.log" 2>&1 || { echo "make install failed (see install.log)" | tee "$DEST/summary.txt"; exit 1; }
H=.venv/bin/harness

bench() {  # bench NAME FILES...: one run, baseline (reference/NAME.cu) included
  local name=$1; shift
  timeout 75 "$H" bench "$name" "$@" --gpu "${GPU:-0}" --budget 1 --repeat 1 --no-history --json \
    > "$DEST/$name.json" 2>> "$DEST/bench.log"
  echo "$name: exit $? at $((SECONDS - START)) s" | tee -a "$DEST/summary.txt"
}

bench prefix_sum solutions/prefix_sum/lookback_l2_prefetch.cu solutions/prefix_sum/lookback_l2_bulk_prefetch.cu solutions/prefix_sum/lookback_l2_prefetch_far.cu \
  solutions/prefix_sum/lookback_small_blocks.cu
bench linear_recurrence solutions/linear_recurrence/lookback_l2_prefetch.cu \
  solutions/linear_recurrence/lookback_small_blocks.cu
bench stream_compaction solutions/stream_compaction/partition_lookback_l2_prefetch.cu \
  solutions/stream_compaction/partition_lookback_l2_prefetch_far.cu

# ncu of the candidate predicted best: DRAM throughput and top stalls against the reference's 52 % and `barrier`.
left=$((170 - (SECONDS - START)))
if [ "$left" -gt 40 ]; then
  report_dir=$(mktemp -d)  # the .ncu-rep stays off $OUT: the JSON summary is what the lead reads
  timeout "$left" "$H" profile prefix_sum solutions/prefix_sum/lookback_l2_prefetch.cu \
    --gpu "${GPU:-0}" --timeout "$((left - 5))" -o "$report_dir/prefix_sum.ncu-rep" --json \
    > "$DEST/profile_prefix_sum.json" 2>> "$DEST/bench.log"
  echo "profile prefix_sum: exit $? at $((SECONDS - START)) s" | tee -a "$DEST/summary.txt"
  rm -rf "$report_dir"
else
  echo "profile prefix_sum: skipped, $left s left" | tee -a "$DEST/summary.txt"
fi
