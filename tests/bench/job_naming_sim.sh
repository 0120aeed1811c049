#!/bin/bash
# Records the clean jobs job_naming_sim draws from (the story's script under
# Open MPI, bsp_step_app under MPICH, 2 ranks each, bound to cores) and runs
# the simulation at the story's scale and at the CI's two ranks. Figures
# only: never fails on one.
#
#   tests/bench/job_naming_sim.sh [BUILD_DIR] [OUT_DIR] [RUNS] [JOBS]
#
# Defaults: build, /tmp/job-clean, 12 runs of each, 200 simulated jobs.
# With OUT_DIR already holding story-*.json and bsp-*.json it only
# simulates (delete them to record anew). Each run waits for a quiet
# machine (load average under 1.5, no job_overhead_bench): the pool is
# meant to be clean.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
out=${2:-/tmp/job-clean}
runs=${3:-12}
jobs=${4:-200}
sim=$build/tests/bench/job_naming_sim

quiet() {
  while pgrep -f job_overhead_bench >/dev/null ||
        awk '{ exit !($1 >= 1.5) }' /proc/loadavg; do
    sleep 10
  done
}

mkdir -p "$out"
if ! ls "$out"/story-*.json "$out"/bsp-*.json >/dev/null 2>&1; then
  for n in $(seq 1 "$runs"); do
    quiet
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 \
      mpirun.openmpi --bind-to core -n 2 -x OPENBLAS_NUM_THREADS \
      "$build"/collector/corenoise job --no-daemon --no-spill --quiet --json "$out/story-$n.json" \
      -- /usr/bin/python3 tests/job/story_numpy.py --steps 150 >/dev/null
    quiet
    mpiexec.mpich -n 2 -bind-to core \
      "$build"/collector/corenoise job --no-daemon --no-spill --quiet --json "$out/bsp-$n.json" \
      -- "$build"/tests/scenario/bsp_step_app --steps 150 --step-products 256 \
      --json "$out/bsp-steps-$n.json" --per-step >/dev/null
    echo "recorded run $n of $runs ($(cut -d' ' -f1 /proc/loadavg) load)" >&2
  done
fi

inputs=("$out"/story-*.json "$out"/bsp-*.json)
echo "# 3,840 ranks on 32 nodes of 120 cores, 200 steps"
"$sim" --ranks 3840 --steps 200 --jobs "$jobs" "${inputs[@]}"
echo
echo "# the same, every step drawn from the union (iid steps)"
"$sim" --ranks 3840 --steps 200 --jobs "$jobs" --steps-model pooled --effects 2,5 "${inputs[@]}"
echo
echo "# the same, the jobs' own speeds kept (node-to-node spread)"
"$sim" --ranks 3840 --steps 200 --jobs "$jobs" --between-jobs --effects 2,5 "${inputs[@]}"
echo
echo "# 2 ranks, 150 steps, as the CI's ground-truth tests run"
"$sim" --ranks 2 --steps 150 --jobs 2000 "${inputs[@]}"
