#!/usr/bin/env bash
# Runs the tensor-core probe programs (tests/emu_programs/tensor_*.cu) on the
# GPU with nvcc for sm_90 (the wgmma probes, tensor_wgmma*.cu, for sm_90a) and
# writes their text outputs to $OUT/probes/; the
# same probes on emu go to $OUT/emu/, and $OUT/diff.txt holds the differences
# (empty when emu matches the GPU byte for byte). To make CI check emu against
# this run: cp "$OUT"/probes/*.txt tests/emu_programs/expected/
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$OUT/environment.txt" 2>&1
make install > "$OUT/install.log" 2>&1 || { echo "make install failed (see install.log)"; exit 1; }
PY=.venv/bin/python
timeout 240 "$PY" tests/emu_programs/tensor_probes.py --backend cuda --out "$OUT/probes" > "$OUT/cuda.log" 2>&1
echo "cuda probes: exit $?" | tee -a "$OUT/summary.txt"
timeout 200 "$PY" tests/emu_programs/tensor_probes.py --backend emu --out "$OUT/emu" > "$OUT/emu.log" 2>&1
echo "emu probes: exit $?" | tee -a "$OUT/summary.txt"
diff -r "$OUT/probes" "$OUT/emu" > "$OUT/diff.txt" 2>&1
echo "diff (GPU vs emu): exit $? ($(wc -l < "$OUT/diff.txt") lines in diff.txt)" | tee -a "$OUT/summary.txt"
