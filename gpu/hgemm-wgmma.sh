#!/usr/bin/env bash
# hgemm on an H200: the wgmma candidates (solutions/hgemm/wgmma_*.cu, cp.async
# ring + warpgroup MMA, sm_90a) against the reference (mma.sync) and cuBLAS
# (library.py) in one bench run, then Nsight Compute and compute-sanitizer on
# the favourite. Everything goes to $OUT/hgemm-wgmma/ (6 files):
#   environment.txt  GPU, driver, nvcc, commit
#   install.log      make install
#   hgemm.json       harness bench: every row's status, median, cv (--json)
#   profile.json     harness profile of wgmma_128x256_4_stages.cu (--json)
#   profile.ncu-rep  its Nsight Compute report (L2 and shared-memory sections)
#   run.log          progress and errors of the three harness commands
# Under 3 minutes (timeouts 115 + 30 + 25 s after make install).
# Usage: GPU=1 OUT=/tmp/o gpu/hgemm-wgmma.sh
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
DIR="$OUT/hgemm-wgmma"
mkdir -p "$DIR"
GPU="${GPU:-0}"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$DIR/environment.txt" 2>&1
make install > "$DIR/install.log" 2>&1 || { echo "make install failed (see install.log)" | tee "$DIR/run.log"; exit 1; }

HARNESS=.venv/bin/harness
FAVOURITE=solutions/hgemm/wgmma_128x256_4_stages.cu
CANDIDATES=(
  "$FAVOURITE"
  solutions/hgemm/wgmma_128x256_bk32_8_stages.cu
  solutions/hgemm/wgmma_192x256_3_warpgroups.cu
  solutions/hgemm/wgmma_128x128_2_blocks_per_sm.cu
)
# wgmma needs the sm_90a target (the default, read from the GPU, is sm_90);
# the reference's mma.sync builds for either.
{
  echo "== bench"
  timeout 115 "$HARNESS" bench hgemm reference/hgemm.cu "${CANDIDATES[@]}" solutions/hgemm/library.py \
    --budget 1 --no-history --json --gpu "$GPU" --arch sm_90a > "$DIR/hgemm.json"
  echo "bench: exit $?"
  echo "== profile $FAVOURITE"
  timeout 30 "$HARNESS" profile hgemm "$FAVOURITE" --arch sm_90a --gpu "$GPU" --timeout 25 \
    -o "$DIR/profile.ncu-rep" --json > "$DIR/profile.json"
  echo "profile: exit $?"
  echo "== compute-sanitizer (memcheck, racecheck, initcheck) on $FAVOURITE, functional tests"
  timeout 25 "$HARNESS" check hgemm "$FAVOURITE" --sanitize --arch sm_90a --gpu "$GPU" --no-history -v
  echo "sanitize: exit $?"
} > "$DIR/run.log" 2>&1
tail -n 40 "$DIR/run.log"
