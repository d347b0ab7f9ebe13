#!/usr/bin/env bash
# The lifecycle branch on a GPU: the cuda paths of the new worker protocol
# (job and events through pipes, the lifeline, per-test limits) under real
# CUDA, CuPy/Triton solutions, and compute-sanitizer (whose child must
# inherit the pipes). Writes the pytest log and a `harness run` report to $OUT.
set -u
OUT=${OUT:?}
make install > "$OUT/install.log" 2>&1 || { echo "make install failed"; exit 1; }
export HARNESS_CACHE="$OUT/cache"
timeout 200 .venv/bin/python -m pytest -q -m gpu tests/test_corpus.py tests/test_sanitizers.py \
  tests/test_gpu_cuda_backend.py tests/test_gpu_python_solutions.py > "$OUT/pytest-gpu.log" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest-gpu.log"
# One run through the CLI, piped: progress lines, the table, the exit code.
timeout 80 .venv/bin/harness run ssm_selective_scan solutions/ssm_selective_scan/chunked_states_in_registers.cu \
  solutions/ssm_selective_scan/cupy_warp_per_channel.py --budget 1 > "$OUT/run.txt" 2> "$OUT/run.err"
echo "harness run rc=$?" >> "$OUT/run.txt"
rm -rf "$OUT/cache"
