#!/usr/bin/env bash
# Candidate kernels for prefix_sum, linear_recurrence and histogram on the GPU:
#  * $OUT/<name>_check.json (after the timings): every candidate through the functional tests on
#    cuda (many tiles truly concurrent: the look-back's aggregate windows and
#    the atomic tile claims run as they never do on emu);
#  * $OUT/<name>.json: one `harness bench` run per challenge, the reference
#    (baseline), the candidates and the library row timed in the same process;
#  * $OUT/profile_linear_recurrence.json: Nsight Compute summary of the main
#    linear_recurrence candidate, only if time is left;
#  * $OUT/log.txt: environment, commands, exit codes, stderr.
# Runs from the repository root in under 5 minutes.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
LOG="$OUT/log.txt"
START=$SECONDS
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed (see log.txt)" | tee -a "$LOG"; exit 1; }
H=.venv/bin/harness

declare -A CANDIDATES=(
  [prefix_sum]="solutions/prefix_sum/lookback_cp_async_ring.cu solutions/prefix_sum/lookback_cp_async_ring_8k_tiles.cu"
  [linear_recurrence]="solutions/linear_recurrence/lookback_cp_async_ring.cu solutions/linear_recurrence/lookback_cp_async_ring_2k_tiles.cu"
  [histogram]="solutions/histogram/lane_private_counters.cu solutions/histogram/shared_privatized_int4.cu"
)
declare -A LIBRARY=([prefix_sum]="solutions/prefix_sum/library.py" [linear_recurrence]="" [histogram]="solutions/histogram/library.py")

# Seconds a command may take: its own cap, or what is left before 285 s.
budget() { local left=$((285 - (SECONDS - START))); (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"; }

# The timings first (what the run is for), then the GPU correctness checks.
for name in prefix_sum linear_recurrence histogram; do
  # shellcheck disable=SC2086
  timeout "$(budget 75)" "$H" bench "$name" "reference/$name.cu" ${CANDIDATES[$name]} ${LIBRARY[$name]} \
    --budget 1 --no-history --json > "$OUT/$name.json" 2>> "$LOG"
  echo "[$((SECONDS - START)) s] bench $name: exit $?" | tee -a "$LOG"
done

for name in prefix_sum linear_recurrence histogram; do
  # shellcheck disable=SC2086
  timeout "$(budget 40)" "$H" check "$name" ${CANDIDATES[$name]} --backend cuda --no-history --json \
    > "$OUT/${name}_check.json" 2>> "$LOG"
  echo "[$((SECONDS - START)) s] check $name: exit $?" | tee -a "$LOG"
done

if (( SECONDS - START < 220 )); then
  timeout "$(budget 60)" "$H" profile linear_recurrence \
    solutions/linear_recurrence/lookback_cp_async_ring.cu -o "$OUT/lr.ncu-rep" --json \
    > "$OUT/profile_linear_recurrence.json" 2>> "$LOG"
  echo "[$((SECONDS - START)) s] profile linear_recurrence: exit $?" | tee -a "$LOG"
  rm -f "$OUT/lr.ncu-rep"
else
  echo "[$((SECONDS - START)) s] profile skipped: not enough time left" | tee -a "$LOG"
fi
