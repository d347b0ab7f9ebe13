#!/usr/bin/env bash
# Grade every solution on a Slurm cluster: a job array of N shards of
# `harness grade --shard K/N`, one GPU each, then a job that merges them into
# one report with JUnit and the HTML report and compares it with a base report.
# Run it on a login node from a checkout; it submits and returns:
#
#   ci/slurm/grade.sh [N]                 # N shards, default 4
#
# Settings, from the environment:
#   GRADE_PATHS     what to grade (default: solutions)
#   GRADE_OUT       where the reports go (default: grade-out/<date-time>)
#   BASE_REPORT     a report to compare with (e.g. the last one of main)
#   HARNESS_BACKEND cuda (default) or emu
# sbatch reads its own SBATCH_* variables (SBATCH_PARTITION, SBATCH_ACCOUNT, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
shards=${1:-4}
out=${GRADE_OUT:-grade-out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
make install  # the shared checkout's .venv, used by every task
array=$(sbatch --parsable --array="1-$shards" --output="$out/shard-%a.log" \
  --export="ALL,GRADE_OUT=$out" ci/slurm/grade-shard.sbatch)
array=${array%%;*}  # --parsable prints "id" or "id;cluster"
report=$(sbatch --parsable --dependency="afterany:$array" --output="$out/report.log" \
  --export="ALL,GRADE_OUT=$out" ci/slurm/grade-report.sbatch)
echo "shards: job $array; report: job ${report%%;*}; results in $out"
