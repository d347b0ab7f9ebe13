#!/usr/bin/env bash
# gemv and causal_dwconv1d on an H200. Writes under $OUT:
#   <name>.json / <name>.txt  `harness run <name> --budget 1`: every solution,
#                             the library row and the reference at the
#                             official size (median, spread, GB/s, % copy BW)
#                             plus all tests; the .txt is the table from it
#   sanitize-<name>.txt       `harness check <name> reference/<name>.cu --sanitize`
#   variants.log              tests/variants/<name>/*.cu judged on cuda
#   times.txt                 how long each step took
# Every step has a timeout drawn from one deadline, so the script ends within
# ~230 s whatever hangs; later steps are skipped (and say so) if time runs out.
set -u
OUT=${OUT:?}
START=$(date +%s)
DEADLINE=230
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
step() {  # step NAME SECONDS COMMAND...: run with a timeout of min(SECONDS, time left)
  local name=$1 want=$2; shift 2
  local budget; budget=$(left)
  (( want < budget )) && budget=$want
  if (( budget < 5 )); then echo "$name: skipped, out of time" >> "$OUT/times.txt"; return; fi
  local t0; t0=$(date +%s)
  timeout "$budget" "$@"
  echo "$name: rc=$? $(( $(date +%s) - t0 )) s (limit $budget s)" >> "$OUT/times.txt"
}

make install > "$OUT/install.log" 2>&1 || { echo "make install failed" > "$OUT/times.txt"; exit 1; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
export HARNESS_CACHE=/tmp/harness-p2-conv-cache  # official-size test data: not under $OUT
CHALLENGES="gemv causal_dwconv1d"

for name in $CHALLENGES; do
  step "run $name" 75 bash -c ".venv/bin/harness run $name --budget 1 --no-history --json > '$OUT/$name.json' 2> '$OUT/$name.err'"
done
for name in $CHALLENGES; do  # the table, from the report just written (no re-run)
  .venv/bin/python - "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
for r in report["results"]:
    t = r.get("timing") or {}
    s = t.get("gpu_time_s") or []
    med = statistics.median(s) * 1e6 if s else float("nan")
    lo = min(s) * 1e6 if s else float("nan")
    bw, moved = t.get("copy_bandwidth_bytes_per_s"), t.get("bytes_moved")
    floor = moved / bw * 1e6 if bw and moved else float("nan")
    print(f"{r['solution']:50s} {'PASS' if r['passed'] else r['reason']:18s} median {med:9.1f} us  min {lo:9.1f} us"
          f"  n {len(s):3d}  x floor {med / floor:6.2f} (floor {floor:.1f} us)")
PY
done
for name in $CHALLENGES; do
  step "sanitize $name" 40 bash -c ".venv/bin/harness check $name reference/$name.cu --sanitize > '$OUT/sanitize-$name.txt' 2>&1"
done
step "variants" 60 bash -c ".venv/bin/python -m pytest -q -m gpu tests/test_variants.py -k 'gemv or causal_dwconv1d' > '$OUT/variants.log' 2>&1"
rm -rf "$HARNESS_CACHE"
cat "$OUT/times.txt"
