#!/usr/bin/env bash
# Times the look-back scan candidates of prefix_sum, linear_recurrence and
# stream_compaction against their references (one `harness bench` per
# challenge: the reference and every candidate in the same run), profiles the
# favourite of each under Nsight Compute, then checks the candidates'
# functional tests on the GPU (the look-back's waiting paths run only there:
# emu runs blocks one after another), each step while the time allows.
# Writes under $OUT/k2-scans/: <name>.json (bench), prof_<name>.txt (profile),
# log.txt (install, checks, stderr). Run from anywhere; GPU index in $GPU.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/k2-scans"
mkdir -p "$DEST"
LOG="$DEST/log.txt"
GPU="${GPU:-0}"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "$GPU"
  nvcc --version | tail -1
  git rev-parse HEAD
} > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed (see log.txt)" | tee -a "$LOG"; exit 1; }
H=.venv/bin/harness

declare -A CANDIDATES=(
  [prefix_sum]="solutions/prefix_sum/lookback_wide_window.cu solutions/prefix_sum/lookback_wide_window_4k_tiles.cu solutions/prefix_sum/lookback_wide_window_cp_async.cu"
  [linear_recurrence]="solutions/linear_recurrence/lookback_interleaved_rows.cu solutions/linear_recurrence/lookback_interleaved_rows_4k_tiles.cu solutions/linear_recurrence/lookback_interleaved_rows_cp_async.cu"
  [stream_compaction]="solutions/stream_compaction/partition_lookback.cu solutions/stream_compaction/partition_lookback_4k_tiles.cu"
)
declare -A FAVOURITE=(
  [prefix_sum]=solutions/prefix_sum/lookback_wide_window.cu
  [linear_recurrence]=solutions/linear_recurrence/lookback_interleaved_rows_cp_async.cu
  [stream_compaction]=solutions/stream_compaction/partition_lookback.cu
)
NAMES=(prefix_sum linear_recurrence stream_compaction)
# Seconds left of the script's 170 s, at most $1: every step below is cut to it.
left() { local l=$((170 - SECONDS)); (( l > $1 )) && l=$1; echo $(( l > 0 ? l : 1 )); }

for name in "${NAMES[@]}"; do
  # shellcheck disable=SC2086  # the candidate lists are space separated on purpose
  timeout "$(left 70)" "$H" bench "$name" "reference/$name.cu" ${CANDIDATES[$name]} --budget 1 --no-history --json \
    --gpu "$GPU" > "$DEST/$name.json" 2>> "$LOG"
  echo "bench $name: exit $? at ${SECONDS}s" | tee -a "$LOG"
done

for name in "${NAMES[@]}"; do
  if (( SECONDS > 150 )); then
    echo "profile $name: skipped, ${SECONDS}s used" | tee -a "$LOG"
    continue
  fi
  # harness's own --timeout: it kills ncu's process group, which an outer `timeout` would miss
  "$H" profile "$name" "${FAVOURITE[$name]}" -o "/tmp/k2-scans-$name.ncu-rep" --gpu "$GPU" --timeout "$(left 40)" \
    > "$DEST/prof_$name.txt" 2>> "$LOG"
  echo "profile $name: exit $? at ${SECONDS}s" | tee -a "$LOG"
done
for name in "${NAMES[@]}"; do
  if (( SECONDS > 160 )); then
    echo "check $name: skipped, ${SECONDS}s used" | tee -a "$LOG"
    continue
  fi
  # shellcheck disable=SC2086
  timeout "$(left 40)" "$H" check "$name" ${CANDIDATES[$name]} --gpu "$GPU" >> "$LOG" 2>&1
  echo "check $name: exit $? at ${SECONDS}s" | tee -a "$LOG"
done

rm -f /tmp/k2-scans-*.ncu-rep
