#!/usr/bin/env bash
# GEMM candidates on the GPU, one `harness bench` per challenge at the official
# size (the reference, the cuBLAS library row and every candidate timed in the
# same run), plus the tensor-core ceilings that decide whether hgemm can reach
# cuBLAS without wgmma:
#   $OUT/sgemm_fp32.json, $OUT/hgemm.json  harness bench --json
#   $OUT/peaks.txt                        mma.sync m16n8k16 and wgmma m64n256k16
#                                         f16->f32 TFLOP/s from registers/shared
#                                         memory only, and their SASS op counts
#   $OUT/log.txt                          environment, install and bench stderr
# Tile variants of the candidates are generated under a temporary folder by
# prepending the configuration macro to a copy of the candidate (self-contained
# files: the build cache is keyed on the file's text).
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
LOG="$OUT/log.txt"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2
  git rev-parse HEAD
} > "$LOG" 2>&1
make install >> "$LOG" 2>&1 || { echo "make install failed (see log.txt)"; exit 1; }
PY=.venv/bin/python
HARNESS=.venv/bin/harness
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# --- tensor-core ceilings (about 10 s) ---
{
  for prog in mma_sync_peak wgmma_peak; do
    echo "== $prog"
    if nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v "gpu/k-gemm/$prog.cu" -o "$WORK/$prog" 2>&1 \
        | grep -E "registers|spill|error|C75"; then :; fi
    [ -x "$WORK/$prog" ] || { echo "$prog: build failed"; continue; }
    cuobjdump --dump-sass "$WORK/$prog" 2>/dev/null | grep -oE "\b(HMMA|HGMMA|WARPGROUP\.[A-Z]+)[.A-Z0-9]*" | sort | uniq -c
    timeout 60 "$WORK/$prog"; echo "exit $?"
  done
} > "$OUT/peaks.txt" 2>&1

# --- sgemm_fp32 ---
S=solutions/sgemm_fp32
sgemm_variant() {  # name, then BM, BN, BK, RM, RN, STAGES
  local f="$WORK/sgemm/$1.cu"; shift
  mkdir -p "$WORK/sgemm"
  { echo "#define SGEMM_CFG $*"; cat "$S/cp_async_multistage.cu"; } > "$f"
  echo "$f"
}
SG_VARIANTS=(
  "$(sgemm_variant cp_async_256x128x8_t16x8_s3 256, 128, 8, 4, 2, 3)"
  "$(sgemm_variant cp_async_128x128x16_t16x8_s3 128, 128, 16, 4, 2, 3)"
  "$(sgemm_variant cp_async_128x128x8_t8x8_s4 128, 128, 8, 2, 2, 4)"
)
echo "== sgemm_fp32 bench" >> "$LOG"
timeout 140 "$HARNESS" bench sgemm_fp32 reference/sgemm_fp32.cu "$S/library.py" "$S/cp_async_multistage.cu" \
  "${SG_VARIANTS[@]}" --budget 1 --no-history --json > "$OUT/sgemm_fp32.json" 2>> "$LOG"
echo "sgemm_fp32 bench: exit $?" >> "$LOG"

# --- hgemm ---
H=solutions/hgemm
hgemm_variant() {  # BM BN STAGES (warps of 64 x 64)
  local f="$WORK/hgemm/mma_pipeline_$1x$2_s$3.cu"
  mkdir -p "$WORK/hgemm"
  { printf '#define HGEMM_BM %s\n#define HGEMM_BN %s\n#define HGEMM_WM 64\n#define HGEMM_WN 64\n#define HGEMM_STAGES %s\n' "$1" "$2" "$3"
    cat "$H/mma_fragment_pipeline.cu"; } > "$f"
  echo "$f"
}
HG_VARIANTS=("$(hgemm_variant 128 128 3)" "$(hgemm_variant 256 128 4)" "$(hgemm_variant 128 256 3)")
echo "== hgemm bench" >> "$LOG"
timeout 140 "$HARNESS" bench hgemm reference/hgemm.cu "$H/library.py" "$H/mma_fragment_pipeline.cu" \
  "${HG_VARIANTS[@]}" --budget 1 --no-history --json > "$OUT/hgemm.json" 2>> "$LOG"
echo "hgemm bench: exit $?" >> "$LOG"
tail -4 "$LOG"
