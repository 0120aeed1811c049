#!/bin/bash
# `corenoise job` on hundreds of real ranks, oversubscribed on this
# machine: halo_app's bulk-synchronous step (its work, then an
# MPI_Allreduce), the last rank with more work, each job run plain and
# under the library. Per job size: whether the job completed, whether
# the late rank was named first (and with which cause), rank 0's peak RSS
# plain and under the library (GNU time around rank 0 alone), the JSON's
# size and the wall time of both runs. Figures only: never fails on one.
#
#   tests/bench/job_scale_bench.sh [BUILD_DIR] [FAMILY] [RANKS...]
#
# Defaults: build, openmpi, 16 64 128 256. FAMILY openmpi runs under
# `mpirun.openmpi --oversubscribe --bind-to none` with ranks yielding in
# their waits (mpi_yield_when_idle 1, its default when oversubscribed);
# mpich under `mpiexec.mpich` yielding at every poll
# (MPIR_CVAR_POLLS_BEFORE_YIELD=1): polling ranks on 2 CPUs would take
# the CPU from the late one for minutes. Each step is 2 s of work over
# all ranks (2000/N ms each on a core of its own, at least 1), 20 steps.
# The work is fixed (halo_app --passes, timed here on one rank first):
# halo_app's own calibration, run by every rank at once on 2 CPUs, would
# measure the scheduler. The late rank has 1 + N/8 times the work (3 at
# 16 ranks): on 2 CPUs its extra work, done once the others wait, delays
# each step by a quarter at every size. With 3 times the work at N ranks
# the delay is 4/N of the step, 3 % at 128, under the scheduler's own
# spread between clean ranks there (their compute times differ by +-10 %
# over a job): the late rank is then no longer what the others wait for.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
family=${2:-openmpi}
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(16 64 128 256)
corenoise=$build/collector/corenoise
app=$build/tests/job/halo_app_$family
work=$(mktemp -d /tmp/corenoise-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Rank 0 under GNU time (its peak RSS into $RSS_FILE), the others as they are.
rank0_rss=$PWD/tests/bench/rank0_rss.sh

launch() {
  local n=$1
  shift
  if [[ $family == openmpi ]]; then
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun.openmpi --oversubscribe --bind-to none -x OMPI_MCA_mpi_yield_when_idle=1 \
      -x RSS_FILE -n "$n" "$@"
  else
    mpiexec.mpich -genv MPIR_CVAR_POLLS_BEFORE_YIELD 1 -genv RSS_FILE "$RSS_FILE" -n "$n" "$@"
  fi
}

# Passes of halo_app's work per ms on one core: 200 steps of 1,000 passes.
export RSS_FILE=/dev/null
start=$(date +%s.%N)
launch 1 "$app" --exchange none --steps 200 --passes 1000 >/dev/null 2>&1
passes_per_ms=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print 200 * 1000 / ((b - a) * 1000) }')

printf '| ranks | completed | late rank (its work x) named | rank 0 peak RSS plain -> library | JSON | wall plain / library |\n'
printf '|---|---|---|---|---|---|\n'
for n in "${sizes[@]}"; do
  late=$((n - 1))
  step_ms=$((2000 / n > 0 ? 2000 / n : 1))
  passes=$(awk -v p="$passes_per_ms" -v ms="$step_ms" 'BEGIN { printf "%d", p * ms + 1 }')
  factor=$((1 + n / 8))
  args=(--exchange none --allreduce-every 1 --steps 20 --passes "$passes" --larger "$late:$factor")
  export RSS_FILE=$work/rss-plain-$n
  start=$(date +%s.%N)
  plain_rc=0
  launch "$n" "$rank0_rss" "$app" "${args[@]}" >"$work/plain-$n.log" 2>&1 || plain_rc=$?
  plain_wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  export RSS_FILE=$work/rss-job-$n
  start=$(date +%s.%N)
  job_rc=0
  launch "$n" "$corenoise" job --no-daemon --quiet --json "$work/job-$n.json" -- \
    "$rank0_rss" "$app" "${args[@]}" >"$work/job-$n.log" 2>&1 || job_rc=$?
  job_wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  named=$(python3 - "$work/job-$n.json" "$late" <<'EOF' 2>/dev/null || echo "no report"
import json, sys
report = json.load(open(sys.argv[1]))
late = int(sys.argv[2])
worst = report["worst_ranks"]
cause = next((r["cause"] for r in report["ranks"] if r["rank"] == late), "absent")
print(("first, " if worst[:1] == [late] else "not first (worst %s), " % worst[:3]) + cause)
EOF
)
  # GNU time's %M: KB; 0 when it wrote none.
  rss_plain=$(tail -n1 "$work/rss-plain-$n" 2>/dev/null | tr -cd 0-9)
  rss_job=$(tail -n1 "$work/rss-job-$n" 2>/dev/null | tr -cd 0-9)
  json_kb=$(($(stat -c %s "$work/job-$n.json" 2>/dev/null || echo 0) / 1024))
  printf '| %d | plain exit %d, library exit %d | (%dx) %s | %.1f -> %.1f MB | %d KB | %.0f / %.0f s |\n' \
    "$n" "$plain_rc" "$job_rc" "$factor" "$named" "$(awk -v k="${rss_plain:-0}" 'BEGIN { print k / 1024 }')" \
    "$(awk -v k="${rss_job:-0}" 'BEGIN { print k / 1024 }')" "$json_kb" "$plain_wall" "$job_wall"
done
