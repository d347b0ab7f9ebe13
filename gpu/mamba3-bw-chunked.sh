#!/usr/bin/env bash
# mamba3_scan_backward chunked candidates on the H200: their times beside the backward reference,
# the baselines of the "2x the forward" target (forward reference and the chunk-parallel forward
# candidate) in the same run, correctness of every test on the GPU, and compute-sanitizer if
# time is left. Everything goes to $OUT/mamba3-bw-chunked/. Every GPU step runs under a timeout
# cut to what is left of a 170 s deadline (after `make install`), so the whole run stays under
# 3 minutes; a step cut short says so in summary.txt. The backward's official-size float64
# oracle data (three rotating input sets, about 33 s each on first use) is computed in three
# CPU processes at once while the forward is benched, and found in the cache by the bench.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DIR="$OUT/mamba3-bw-chunked"
mkdir -p "$DIR"
GPU="${GPU:-0}"
CAND=solutions/mamba3_scan_backward/chunked_3xtf32.cu
CAND2=solutions/mamba3_scan_backward/chunked_lookback_3xtf32.cu  # both carries by look-back, two launches
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader -i "$GPU"
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DIR/environment.txt" 2>&1
make install > "$DIR/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
H=.venv/bin/harness
DEADLINE=$((SECONDS + 170))

# step NAME CAP COMMAND...: COMMAND under a timeout of min(CAP, time left), exit status logged
step() {
  local name=$1 cap=$2 left=$((DEADLINE - SECONDS))
  shift 2
  if ((left < 5)); then echo "$name: not run (deadline)" | tee -a "$DIR/summary.txt"; return; fi
  timeout $((cap < left ? cap : left)) "$@"
  echo "$name: exit $?" | tee -a "$DIR/summary.txt"
}

# registers, spills and shared memory of the candidates (CPU only, alongside the GPU steps)
{ nvcc -O3 -arch=sm_90a -Xptxas -v -c "$CAND" -o /dev/null > "$DIR/ptxas.txt" 2>&1
  nvcc -O3 -arch=sm_90a -Xptxas -v -c "$CAND2" -o /dev/null > "$DIR/ptxas_lookback.txt" 2>&1; } &
PTXAS=$!

# the official-size data sets of the backward, one process each (the bench reads the cache)
PREP=()
for v in 0 1 2; do
  .venv/bin/python - "$v" > "$DIR/prepare_$v.log" 2>&1 <<'PY' &
import sys
from harness.challenge import load_challenge
from harness.testdata import case_data_path
challenge = load_challenge("mamba3_scan_backward")
print(case_data_path(challenge, challenge.tests_of("performance")[0], int(sys.argv[1])))
PY
  PREP+=($!)
done

step bench_forward 50 "$H" bench mamba3_scan reference/mamba3_scan.cu solutions/mamba3_scan/chunk_parallel_lookback.cu \
  --budget 1 --no-history --gpu "$GPU" --json > "$DIR/bench_forward.json" 2> "$DIR/bench_forward.log"
wait "${PREP[@]}"
step bench_backward 90 "$H" bench mamba3_scan_backward reference/mamba3_scan_backward.cu "$CAND" "$CAND2" --budget 1 \
  --no-history --gpu "$GPU" --json > "$DIR/bench_backward.json" 2> "$DIR/bench_backward.log"
step check 35 "$H" check mamba3_scan_backward "$CAND" "$CAND2" --gpu "$GPU" --no-history -v > "$DIR/check.txt" 2>&1
step sanitize 40 "$H" check mamba3_scan_backward "$CAND2" "$CAND" --gpu "$GPU" --no-history --sanitize > "$DIR/sanitize.txt" 2>&1
wait "$PTXAS"
