#!/usr/bin/env bash
# H200 run for the practice workflow (history, profile, HTML report); under 5 minutes.
# Writes under $OUT:
#   env.txt                      GPU, driver, ncu and matplotlib versions
#   profile/reference.ncu-rep    harness profile's Nsight Compute report of the reference
#   profile/reference.csv        ncu's raw page (--csv --page raw --print-units base): the parser's fixture
#   profile.json, profile.txt    harness profile --json, and the printed summary
#   grade.json, grade.xml, grade.html   a small harness grade with --html
#   history.txt                  a practice session (check, bench, run) in harness list and harness history
#   pytest-gpu.txt               the gpu-marked tests of this work
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
make install > "$OUT/install.log" 2>&1 || { echo "make install failed"; tail -20 "$OUT/install.log"; exit 1; }
H=.venv/bin/harness
export HARNESS_HOME="$OUT/home"
{
  nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  (command -v ncu && ncu --version) || echo "ncu: not on PATH"; ls /usr/local/cuda/bin/ncu 2>/dev/null
  .venv/bin/python -c "import matplotlib; print('matplotlib', matplotlib.__version__)" || echo "matplotlib: missing (no --html)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

mkdir -p "$OUT/profile"
echo "== profile (json)"
timeout 150 $H profile ssm_selective_scan reference/ssm_selective_scan.cu -o "$OUT/profile/reference.ncu-rep" --json \
  > "$OUT/profile.json" 2> "$OUT/profile.err"; echo "rc=$?"; tail -5 "$OUT/profile.err"
echo "== profile (table, from a second run)"
timeout 90 $H profile ssm_selective_scan reference/ssm_selective_scan.cu -o "$OUT/profile/reference-2.ncu-rep" \
  > "$OUT/profile.txt" 2>&1; echo "rc=$?"; cat "$OUT/profile.txt"

echo "== grade --html"
html=()
.venv/bin/python -c "import matplotlib" 2>/dev/null && html=(--html "$OUT/grade.html")
timeout 150 $H grade solutions/ssm_selective_scan/chunked_states_in_registers.cu \
  solutions/ssm_selective_scan/lane_split_single_pass.cu solutions/ssm_selective_scan/cupy_warp_per_channel.py \
  --budget 1 --no-history --report "$OUT/grade.json" --junit "$OUT/grade.xml" "${html[@]}" > "$OUT/grade.txt" 2>&1
echo "rc=$?"; tail -15 "$OUT/grade.txt"

echo "== practice session"
{
  m="$OUT/mine.cu"
  $H init ssm_selective_scan "$m"
  $H check ssm_selective_scan "$m"; echo "check (starter) rc=$?"
  cp solutions/ssm_selective_scan/lane_split_single_pass.cu "$m"
  $H check ssm_selective_scan "$m"; echo "check rc=$?"
  $H bench ssm_selective_scan "$m" --budget 1 --no-baseline; echo "bench rc=$?"
  $H run ssm_selective_scan "$m" --budget 1; echo "run rc=$?"
  $H list
  $H history
  $H history ssm_selective_scan --json
} > "$OUT/history.txt" 2>&1
tail -30 "$OUT/history.txt"

echo "== gpu tests"
timeout 120 .venv/bin/python -m pytest -q -m gpu tests/test_profile.py > "$OUT/pytest-gpu.txt" 2>&1
echo "rc=$?"; tail -5 "$OUT/pytest-gpu.txt"
