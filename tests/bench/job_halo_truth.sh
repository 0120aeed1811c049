#!/bin/bash
# The halo-exchange ground truth of docs/job.md, run RUNS times per case:
# tests/job/halo_app under `corenoise job`, 2 ranks bound one per CPU (and
# 4 ranks two per CPU under Open MPI), with 30 % of CPU 1 taken by another
# process (SCHED_FIFO, or normal priority) or rank 2 given 1.5 × the work,
# and clean. Prints, per run, the ranks named (worst first) with their
# causes, each rank's waiting caused in exchanges, and the threshold.
# Figures only: never fails on one. Run it alone: it judges this
# machine's speed. About 2 s a run.
#
#   tests/bench/job_halo_truth.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-5}
corenoise=$build/collector/corenoise
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
report=$(mktemp /tmp/halo-truth.XXXXXX.json)
trap 'rm -f "$report"' EXIT

summary() {
  /usr/bin/python3 - "$report" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
named = [(x["rank"], x["cause"]) for x in sorted(r["ranks"], key=lambda x: -x["wait_caused_seconds"]) if x["cause"] != "none"]
caused = " ".join("%d:%.3f" % (x["rank"], x["exchange_wait_caused_seconds"]) for x in r["ranks"])
print("%-22s named %-40s exchange caused %s  threshold %.3f  waits %.3f s in exchanges, %.3f s at collectives" % (
    sys.argv[2], named, caused, r["cause_threshold_seconds"], r["exchange_wait_seconds"], r["collective_wait_seconds"]))
PY
}

# case name, noise ("fifo", "normal" or "none"), launcher prefix, halo_app, its arguments
run_case() {
  local name=$1 noise=$2 launcher=$3 app=$4 i
  local -a args launch
  read -ra args <<< "$5"
  read -ra launch <<< "$launcher"
  for ((i = 1; i <= runs; i++)); do
    local pid=""
    if [ "$noise" != none ]; then
      local -a prio=()
      [ "$noise" = normal ] && prio=(--normal)
      "$corenoise" inject --cpus 1 --seconds 30 --duty 0.3 --period 0.01 "${prio[@]}" > /dev/null &
      pid=$!
      sleep 0.3
    fi
    "${launch[@]}" "$corenoise" job --no-daemon --quiet --json "$report" -- "$build/tests/job/$app" --steps 300 "${args[@]}" \
      > /dev/null 2>&1 || echo "$name: run $i failed"
    [ -n "$pid" ] && { kill "$pid"; wait "$pid" 2>/dev/null || true; }
    summary "$name"
  done
}

mpich="mpiexec.mpich -bind-to core -n 2"
openmpi="mpirun.openmpi --bind-to core -n 2"
four="mpirun.openmpi --oversubscribe --map-by core --bind-to core:overload-allowed -n 4"
run_case nonblocking-fifo fifo "$mpich" halo_app_mpich "--exchange nonblocking --dims 2"
run_case irecv-send-normal normal "$openmpi" halo_app_openmpi "--exchange irecv-send"
run_case blocking-fifo fifo "$mpich" halo_app_mpich "--exchange blocking"
run_case four-more-work none "$four" halo_app_openmpi "--exchange nonblocking --dims 2 --larger 2:1.5"
run_case clean-mpich none "$mpich" halo_app_mpich "--exchange nonblocking --dims 2"
run_case clean-openmpi none "$openmpi" halo_app_openmpi "--exchange nonblocking --dims 2"
run_case clean-mpich-blocking none "$mpich" halo_app_mpich "--exchange blocking"
