#!/usr/bin/env bash
# mamba3_scan_backward candidates against the reference, and the forward
# reference in the same session (the target is twice the forward's median).
# Writes under "$OUT/bw2-mamba3/":
#   bw.json        harness bench of the backward reference and the three candidates
#   fwd.json       harness bench of the forward reference
#   prof.txt       harness profile (ncu, per kernel) of shuffle_two_blocks_per_sm.cu
#   prof_ref.txt   the same profile of reference/mamba3_scan_backward.cu
#   log.txt        stderr of every step and the exit codes
# Runs from the repository root on one GPU ("${GPU:-0}"); about 4 minutes, most
# of it the first preparation of the official-size float64 test data (~100 s).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/bw2-mamba3"
mkdir -p "$DEST"
LOG="$DEST/log.txt"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; nvcc --version | tail -1; git rev-parse HEAD; } > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed" | tee -a "$LOG"; exit 1; }
H=.venv/bin/harness
# Every step gets at most its own limit and never past 230 s from the start.
left() { local l=$((230 - SECONDS)); (( l < $1 )) && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
G="${GPU:-0}"
D=solutions/mamba3_scan_backward

timeout "$(left 170)" "$H" bench mamba3_scan_backward reference/mamba3_scan_backward.cu \
  "$D/shuffle_reduction.cu" "$D/shuffle_two_blocks_per_sm.cu" "$D/shuffle_four_blocks_per_sm.cu" \
  --budget 1 --no-history --json --gpu "$G" > "$DEST/bw.json" 2>> "$LOG"
echo "bench backward: exit $?" >> "$LOG"

timeout "$(left 40)" "$H" bench mamba3_scan reference/mamba3_scan.cu --budget 1 --no-history --json --gpu "$G" \
  > "$DEST/fwd.json" 2>> "$LOG"
echo "bench forward: exit $?" >> "$LOG"

timeout "$(left 45)" "$H" profile mamba3_scan_backward "$D/shuffle_two_blocks_per_sm.cu" --gpu "$G" -o /tmp/bw2-mamba3-cand.ncu-rep \
  > "$DEST/prof.txt" 2>> "$LOG"
echo "profile candidate: exit $?" >> "$LOG"
timeout "$(left 45)" "$H" profile mamba3_scan_backward reference/mamba3_scan_backward.cu --gpu "$G" -o /tmp/bw2-mamba3-ref.ncu-rep \
  > "$DEST/prof_ref.txt" 2>> "$LOG"
echo "profile reference: exit $? (script ${SECONDS} s)" >> "$LOG"
rm -f /tmp/bw2-mamba3-cand.ncu-rep /tmp/bw2-mamba3-ref.ncu-rep
cat "$LOG" | tail -4
