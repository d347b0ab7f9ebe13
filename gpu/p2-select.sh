#!/usr/bin/env bash
# H200 run for row_topk and stream_compaction: every solution, the library
# row and the reference timed at the official size (--budget 1), the CUDA
# variants judged on the GPU, and the references under compute-sanitizer.
# Everything lands in $OUT; $OUT/summary.txt lists the exit status of each step.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)" | tee "$OUT/summary.txt"; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
for name in row_topk stream_compaction; do  # timing runs one at a time
  timeout 80 harness run "$name" --budget 1 --no-history --json > "$OUT/$name.json" 2> "$OUT/$name.run.log"
  echo "run $name: exit $?" | tee -a "$OUT/summary.txt"
done
# correctness only from here: the four checks share the GPU, side by side
pids=()
for name in row_topk stream_compaction; do
  timeout 70 python -m pytest -q -m gpu tests/test_variants.py -k "$name" > "$OUT/variants_$name.log" 2>&1 &
  pids+=($!)
  timeout 70 harness check "$name" "reference/$name.cu" --sanitize > "$OUT/sanitize_$name.log" 2>&1 &
  pids+=($!)
done
steps=(variants_row_topk sanitize_row_topk variants_stream_compaction sanitize_stream_compaction)
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  echo "${steps[$i]}: exit $?" | tee -a "$OUT/summary.txt"
done
