#!/usr/bin/env bash
# Times the persistent next-tile-prefetch candidates of prefix_sum,
# linear_recurrence and stream_compaction against their references: one
# `harness bench` per challenge, the reference and the candidate in the same
# run. Writes under $OUT/r2-scans/: <name>.json (bench), log.txt (install,
# stderr). Run from anywhere; GPU index in $GPU. Under 2 minutes.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DEST="$OUT/r2-scans"
mkdir -p "$DEST"
LOG="$DEST/log.txt"
GPU="${GPU:-0}"
git rev-parse HEAD > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed (see log.txt)" | tee -a "$LOG"; exit 1; }
H=.venv/bin/harness

# Seconds left of the script's 115 s, at most $1: each bench is cut to it.
left() { local l=$((115 - SECONDS)); (( l > $1 )) && l=$1; echo $(( l > 1 ? l : 1 )); }

for name in prefix_sum linear_recurrence stream_compaction; do
  echo "== $name" >> "$LOG"
  timeout "$(left 40)" "$H" bench "$name" "reference/$name.cu" "solutions/$name/persistent_next_tile_prefetch.cu" \
    --budget 1 --no-history --json --gpu "$GPU" > "$DEST/$name.json" 2>> "$LOG"
  echo "$name: exit $? after ${SECONDS}s" | tee -a "$LOG"
done
