#!/usr/bin/env bash
# H200 run for spmv_csr and embedding_gather: every solution, the library row
# and the reference timed at the official size (harness run --json), the
# variants on the GPU, and compute-sanitizer on each reference (each step has a
# time limit; the limits add up to under 4 minutes). Everything
# lands in $OUT; summary.txt has one line per step with its exit status.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)" | tee -a "$OUT/summary.txt"; exit 1; }
HARNESS=.venv/bin/harness
PY=.venv/bin/python
step() {  # step NAME TIMEOUT_S COMMAND...: output to $OUT/NAME.log, status to summary.txt
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? ($((SECONDS - start)) s)" | tee -a "$OUT/summary.txt"
}
for name in spmv_csr embedding_gather; do
  step "run_$name" 65 sh -c "$HARNESS run $name --budget 1 --no-history --json > '$OUT/$name.json'"
  step "variants_$name" 20 "$PY" -m pytest -q -m gpu tests/test_variants.py -k "$name"
  step "sanitize_$name" 30 "$HARNESS" check "$name" "reference/$name.cu" --sanitize
done
