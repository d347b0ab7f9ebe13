#!/usr/bin/env bash
# H200 run for hgemm and attention_fwd (under 5 minutes), results in $OUT:
#   hgemm.json, attention_fwd.json   harness run --json: every solution, the library rows and
#                                    the reference timed at the official size
#   variants.txt                     tests/variants/{hgemm,attention_fwd} judged on cuda
#   sanitize_<name>.txt              compute-sanitizer (memcheck, racecheck, initcheck) on each reference
#   sweep.txt                        tile configurations of both references, standalone driver
#   summary.txt                      exit status of every step
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
PY=.venv/bin/python
HARNESS=.venv/bin/harness
step() {  # name, timeout in seconds, command...
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@"
  echo "$name: exit $?" | tee -a "$OUT/summary.txt"
}
step "harness run hgemm" 80 "$HARNESS" run hgemm --json --budget 2 > "$OUT/hgemm.json" 2> "$OUT/hgemm.log"
step "harness run attention_fwd" 100 "$HARNESS" run attention_fwd --json --budget 2 > "$OUT/attention_fwd.json" 2> "$OUT/attention_fwd.log"
step "variants on cuda" 40 "$PY" -m pytest -q -m gpu tests/test_variants.py -k "hgemm or attention_fwd" > "$OUT/variants.txt" 2>&1
step "sanitize hgemm" 20 "$HARNESS" check hgemm reference/hgemm.cu --sanitize > "$OUT/sanitize_hgemm.txt" 2>&1
step "sanitize attention_fwd" 20 "$HARNESS" check attention_fwd reference/attention_fwd.cu --sanitize > "$OUT/sanitize_attention_fwd.txt" 2>&1

# Tile sweep: each configuration built in the background meanwhile would fight the
# timed runs for the CPU, so they are built and run here, one after another.
sweep() {  # label, -D flags...
  local label=$1; shift
  local bin="$OUT/sweep_bin"
  if nvcc -O3 -arch=sm_90 -std=c++17 -o "$bin" "$@" gpu/tile_sweep.cu > "$OUT/sweep_build.log" 2>&1; then
    echo "$label: $(timeout 20 "$bin")" >> "$OUT/sweep.txt"
  else
    echo "$label: build failed" >> "$OUT/sweep.txt"
  fi
}
for cfg in "128 256 64 64 3" "128 256 64 64 4" "128 128 64 64 4" "256 128 64 64 3"; do
  set -- $cfg
  sweep "hgemm BM=$1 BN=$2 WM=$3 WN=$4 STAGES=$5" -DREFERENCE='"../reference/hgemm.cu"' -DSWEEP_HGEMM \
    -DHGEMM_BM=$1 -DHGEMM_BN=$2 -DHGEMM_WM=$3 -DHGEMM_WN=$4 -DHGEMM_STAGES=$5
done
for blocks in 1 2; do
  sweep "attention_fwd ATTN_MIN_BLOCKS=$blocks" -DREFERENCE='"../reference/attention_fwd.cu"' -DATTN_MIN_BLOCKS=$blocks
done
echo "sweep: done" | tee -a "$OUT/summary.txt"
