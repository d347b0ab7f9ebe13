#!/usr/bin/env bash
# The rmsnorm and layernorm challenges on an H200. Writes under $OUT:
#   environment.txt         GPU, driver, nvcc, torch version, commit
#   <name>.json / .txt      `harness run <name> --budget 1 --no-history --json`: every
#                           solution, the library row (PyTorch) and the reference at
#                           the official size, plus all tests; .txt is a one-line-per-
#                           solution digest of the JSON (verdict, median, min, samples)
#   variants-<name>.log     tests/variants/<name>/*.cu judged on cuda
#   sanitize-<name>.txt     `harness check <name> reference/<name>.cu --sanitize`
#   times.txt               each step's exit status and duration
# Every step's timeout is drawn from one 230 s deadline, so the script ends in
# under 4 minutes whatever hangs; steps left without time say so in times.txt.
set -u
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
START=$SECONDS
DEADLINE=230
step() {  # step NAME SECONDS COMMAND...: run with a timeout of min(SECONDS, time left)
  local name=$1 want=$2 left budget t0
  shift 2
  left=$((DEADLINE - (SECONDS - START)))
  budget=$((want < left ? want : left))
  if ((budget < 5)); then echo "$name: skipped, out of time" >> "$OUT/times.txt"; return; fi
  t0=$SECONDS
  timeout "$budget" "$@"
  echo "$name: exit $? $((SECONDS - t0)) s (limit $budget s)" >> "$OUT/times.txt"
}

{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__)"
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)" > "$OUT/times.txt"; exit 1; }
export HARNESS_CACHE=/tmp/harness-p2-norms-cache  # official-size test data (GBs): not under $OUT
HARNESS=.venv/bin/harness
CHALLENGES="rmsnorm layernorm"

for name in $CHALLENGES; do
  step "run $name" 90 sh -c "$HARNESS run $name --budget 1 --no-history --json > '$OUT/$name.json' 2> '$OUT/$name.err'"
  .venv/bin/python - "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
for r in report["results"]:
    s = (r.get("timing") or {}).get("gpu_time_s") or []
    med = statistics.median(s) * 1e6 if s else float("nan")
    low = min(s) * 1e6 if s else float("nan")
    verdict = "PASS" if r["passed"] else r["reason"]
    print(f"{r['solution']:45s} {verdict:18s} median {med:9.1f} us  min {low:9.1f} us  n {len(s)}")
PY
done
for name in $CHALLENGES; do
  step "variants $name" 30 sh -c ".venv/bin/python -m pytest -q -m gpu tests/test_variants.py -k $name > '$OUT/variants-$name.log' 2>&1"
  step "sanitize $name" 30 sh -c "$HARNESS check $name reference/$name.cu --sanitize > '$OUT/sanitize-$name.txt' 2>&1"
done
rm -rf "$HARNESS_CACHE"
cat "$OUT/times.txt"
