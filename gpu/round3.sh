#!/usr/bin/env bash
# Times every round-3 candidate beside its reference on a two-GPU H200 host in
# one call: lane 0 (GPU 0, cores 0-15) runs gpu/mamba3-chunked.sh then
# gpu/lookback-r3.sh; lane 1 (GPU 1, cores 16-31) runs gpu/topk-spmv-r3.sh then
# gpu/ssm-fwd-warps.sh. Each script writes under $OUT/<its name>/; at the end
# everything is packed into $OUT/round3.tgz (the device returns few files).
# Timings from two lanes are side by side on one host: a candidate that meets
# its target here is confirmed afterwards by `harness run` on a quiet GPU.
# About 7 minutes after the install; gpu/mamba3-bw-chunked.sh (its oracle data
# alone takes ~100 s) goes in a call of its own.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
W=$(mktemp -d)
finish() { find "$W" -name '*.ncu-rep' -delete; tar czf "$OUT/round3.tgz" -C "$W" .; rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv > "$W/gpus.txt" 2>&1
make install > "$W/install.log" 2>&1 || { echo "make install failed"; tail -20 "$W/install.log"; exit 1; }
lane() {  # lane GPU CORES SCRIPT...
  local gpu=$1 cores=$2; shift 2
  for s in "$@"; do
    [ -f "gpu/$s.sh" ] || { echo "$s: missing"; continue; }
    GPU=$gpu OUT=$W taskset -c "$cores" timeout -k 5 200 bash "gpu/$s.sh" > "$W/$s.log" 2>&1
    echo "$s rc $? at $SECONDS s"
  done
}
lane 0 0-15 mamba3-chunked lookback-r3 > "$W/lane0.log" 2>&1 &
L0=$!
lane 1 16-31 topk-spmv-r3 ssm-fwd-warps > "$W/lane1.log" 2>&1 &
L1=$!
wait "$L0" "$L1"
cat "$W/lane0.log" "$W/lane1.log"
