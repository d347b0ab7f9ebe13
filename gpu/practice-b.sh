#!/usr/bin/env bash
# H200 measurements for softmax_rows, transpose, linear_recurrence and
# sgemm_fp32. Run from the repository root with OUT set; everything measured
# lands under $OUT. Steps run in order of importance, each under its own
# timeout, and a step that would cross the 290-second deadline is skipped
# (and says so in $OUT/steps.txt).
set -u
: "${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
START=$(date +%s)
DEADLINE=290
H=.venv/bin/harness
PY=.venv/bin/python
CHALLENGES=(softmax_rows transpose linear_recurrence sgemm_fp32)

step() {  # step LABEL SECONDS OUTFILE command...
    local label=$1 seconds=$2 outfile=$3
    shift 3
    local left=$((DEADLINE - ($(date +%s) - START)))
    if ((left < 10)); then
        echo "$label: skipped, $left s left" >> "$OUT/steps.txt"
        return
    fi
    ((seconds > left)) && seconds=$left
    local t0=$(date +%s)
    timeout "$seconds" "$@" > "$OUT/$outfile" 2>&1
    echo "$label: exit $? after $(($(date +%s) - t0)) s (limit $seconds s)" >> "$OUT/steps.txt"
}

step "make install" 60 install.log make install
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1

# 1. Every solution, the library row and the reference at the official size:
#    medians, spread, GB/s and % copy BW (or GFLOP/s), verified on fresh inputs.
for name in "${CHALLENGES[@]}"; do
    step "run $name" 75 "$name.json" "$H" run "$name" --json --budget 1
done

# 2. The sgemm reference's block tiles, timed side by side (SGEMM_TILE: 0 =
#    128x128x8 default, 1 = 128x128x16, 2 = 64x128x16, 3 = 128x64x16).
SWEEP=$(mktemp -d)
trap 'rm -rf "$SWEEP"' EXIT
for t in 0 1 2 3; do
    { echo "#define SGEMM_TILE $t"; cat reference/sgemm_fp32.cu; } > "$SWEEP/sgemm_tile_$t.cu"
done
step "sgemm tile sweep" 60 sgemm_tile_sweep.json "$H" bench sgemm_fp32 "$SWEEP"/sgemm_tile_*.cu --json --budget 1

# 3. The independent correct and the typically wrong variants, on the GPU.
step "variants on cuda" 60 variants_cuda.txt "$PY" -m pytest -q -m gpu tests/test_variants.py \
    -k "softmax_rows or transpose or linear_recurrence or sgemm_fp32"

# 4. The references under compute-sanitizer (memcheck, racecheck, initcheck).
for name in "${CHALLENGES[@]}"; do
    step "sanitize $name" 45 "$name.sanitize.txt" "$H" check "$name" "reference/$name.cu" --sanitize
done
echo "total $(($(date +%s) - START)) s" >> "$OUT/steps.txt"
