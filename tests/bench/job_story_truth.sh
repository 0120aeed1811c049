#!/bin/bash
# The story's ground truth of docs/job.md and docs/guide.md, run RUNS times
# per case: tests/job/story_numpy.py (mpi4py, numpy, Open MPI, one rank per
# core) under `corenoise job` — clean; rank 1 computing twice over in its
# first step only; OPENBLAS_NUM_THREADS=2 on rank 1 alone; the story's
# XLA_FLAGS; two threads of rank 1's own. Prints, per run, the warm-up's
# steps, each phase's late ranks with causes, the whole job's, the worst
# step, the findings, each rank's busy threads, and the ranks' compute CPU
# seconds (unequal ones are the host's vCPU speeds: docs/validation.md).
# Figures only: never fails on one. Run it alone: it judges this machine's
# speed. About 5 s a run.
#
#   tests/bench/job_story_truth.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-5}
corenoise=$build/collector/corenoise
python=/usr/bin/python3
story=tests/job/story_numpy.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
report=$(mktemp /tmp/story-truth.XXXXXX.json)
trap 'rm -f "$report"' EXIT

summary() {
  "$python" - "$report" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def late(p):
    return ",".join("%d:%s" % (x["rank"], x["cause"]) for x in p["late_ranks"]) or "-"
phases = " ".join("%s[%d-%d] %s" % ("warm-up" if p["name"] == "warm-up" else "steady",
                                    p["first_step"], p["last_step"], late(p)) for p in r["phases"])
named = ",".join("%d:%s" % (n, next(x["cause"] for x in r["ranks"] if x["rank"] == n))
                 for n in r["worst_ranks"]) or "-"
worst = r["worst_steps"][0] if r["worst_steps"] else None
step = "step %d %.1f ms rank %d %s" % (worst["first_step"], worst["wait_caused_seconds"] * 1e3,
                                      worst["last_rank"], worst["cause"]) if worst else "-"
findings = ",".join(f["kind"] for f in r["findings"]) or "-"
busy = ",".join(str(x["busy_threads"]) for x in r["ranks"])
cpu = "/".join("%.2f" % x["compute_cpu_seconds"] for x in r["ranks"])
print("%-13s %s | job %s | %s | findings %s | busy %s | cpu %s" % (
    sys.argv[2], phases, named, step, findings, busy, cpu))
PY
}

launch="mpirun.openmpi --bind-to core -n 2 -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS"
# A command line for bash -c: the paths as shell words (BUILD_DIR may hold a space).
job() { echo "$(printf %q "$corenoise") job --no-daemon --quiet --json $report -- $python $story $*"; }

# case name, command line
run_case() {
  local name=$1 i
  for ((i = 1; i <= runs; i++)); do
    bash -c "$2" > /dev/null 2>&1 || echo "$name: run $i failed"
    summary "$name"
  done
}

run_case clean "$launch $(job --steps 150)"
run_case first-step "$launch $(job --steps 60 --iterations 40 --first-step 1:2)"
run_case openblas-2 "mpirun.openmpi --bind-to core -x OMP_NUM_THREADS -np 1 env OPENBLAS_NUM_THREADS=1 $(job --steps 100 --size 192) : -x OMP_NUM_THREADS -np 1 env OPENBLAS_NUM_THREADS=2 $(job --steps 100 --size 192)"
run_case xla-flags "XLA_FLAGS='--xla_force_host_platform_device_count=1 --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1' $launch -x XLA_FLAGS $(job --steps 150)"
run_case own-threads "$launch $(job --steps 150 --own-threads 1:2)"
