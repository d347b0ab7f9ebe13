#!/usr/bin/env bash
# ssm_selective_scan, one state per lane: times the four candidates against the
# reference at the official size, checks all four on the GPU (every functional
# test, official-size inputs in the bench), profiles the predicted best and the
# reference under Nsight Compute, then runs it under compute-sanitizer if time is left.
# Run from the repository root with OUT set; GPU picks the device (default 0).
# Writes $OUT/ssm-fwd-warps/{bench.json,prof-best.json,prof-reference.json,log.txt};
# about 3 minutes.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DIR="$OUT/ssm-fwd-warps"
mkdir -p "$DIR"
LOG="$DIR/log.txt"
GPU="${GPU:-0}"
START=$SECONDS
NAME=ssm_selective_scan
CANDIDATES=(solutions/$NAME/one_state_per_lane.cu solutions/$NAME/one_state_per_lane_skewed.cu
            solutions/$NAME/one_state_per_lane_skewed_ystaged.cu solutions/$NAME/half_channel_per_warp.cu)
BEST=solutions/$NAME/half_channel_per_warp.cu  # predicted (reference/ssm_selective_scan.md)
H=.venv/bin/harness
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

step() { echo "== [$((SECONDS - START)) s] $*" >> "$LOG"; }
# a step's time limit: N seconds, or what is left of 175 if less (at least 1)
cap() { local left=$((175 - (SECONDS - START))); [ "$left" -lt "$1" ] && echo $((left > 1 ? left : 1)) || echo "$1"; }

{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  git rev-parse HEAD 2>/dev/null
} > "$LOG" 2>&1
[ -x "$H" ] || make install >> "$LOG" 2>&1 || { echo "make install failed" >> "$LOG"; exit 1; }

step "bench: reference and the four candidates, official size"
timeout "$(cap 90)" "$H" bench $NAME reference/$NAME.cu "${CANDIDATES[@]}" --budget 1 --no-history \
  --gpu "$GPU" --json > "$DIR/bench.json" 2>> "$LOG"
echo "exit $?" >> "$LOG"

step "check: all four candidates, every functional test on the GPU"
timeout "$(cap 30)" "$H" check $NAME "${CANDIDATES[@]}" --no-history --gpu "$GPU" -v >> "$LOG" 2>&1
echo "exit $?" >> "$LOG"

# harness profile's sections plus the pipe, shared-memory and instruction-mix
# tables, to tell which of MUFU, the issue slots or the load/store path bounds
# each kernel; the reference is profiled too, as the yardstick for the same counters.
profile() {  # SOLUTION TAG
  step "profile: $1"
  timeout "$(cap 40)" .venv/bin/python - "$1" "$GPU" "/tmp/ssm-fwd-warps-$2.ncu-rep" > "$DIR/prof-$2.json" 2>> "$LOG" <<'PY'
import sys
from harness import profile
sections = profile.SECTIONS + ("ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "InstructionStats")
profile.ncu_command.__defaults__ = (sections,)
from harness.cli import main
sys.argv = ["harness", "profile", "ssm_selective_scan", sys.argv[1], "--gpu", sys.argv[2], "-o", sys.argv[3], "--json"]
main()
PY
  echo "exit $?" >> "$LOG"
  if [ -x "$NCU" ] && [ -f "/tmp/ssm-fwd-warps-$2.ncu-rep" ]; then
    timeout "$(cap 10)" "$NCU" --import "/tmp/ssm-fwd-warps-$2.ncu-rep" --page details >> "$LOG" 2>&1
  fi
  rm -f "/tmp/ssm-fwd-warps-$2.ncu-rep" "/tmp/ssm-fwd-warps-$2.csv"
}
profile "$BEST" best
profile reference/$NAME.cu reference

LEFT=$((175 - (SECONDS - START)))
if [ "$LEFT" -gt 20 ]; then
  step "sanitize: $BEST (memcheck, racecheck, initcheck; ${LEFT} s left)"
  timeout "$LEFT" "$H" check $NAME "$BEST" --sanitize --no-history --gpu "$GPU" >> "$LOG" 2>&1
  echo "exit $?" >> "$LOG"
else
  step "sanitize skipped: ${LEFT} s left"
fi
step "done"
