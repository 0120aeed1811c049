#!/bin/bash
# `corenoise job` when one rank of hundreds is SIGKILLed mid-job (as the
# OOM killer would), oversubscribed on this machine: does the job end, in
# how long, and does `corenoise job --report` build the report from the
# ranks' spill files? halo_app's bulk-synchronous step (1 ms of work, an
# MPI_Allreduce) for far longer than the run, rank N/2 SIGKILLed 20 s in
# (`timeout -s KILL`), under each family's launcher (both then kill the
# other ranks). Figures only: never fails on one.
#
#   tests/bench/job_killed_rank_bench.sh [BUILD_DIR] [RANKS...]   (default: build, 64 256 512)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift $(($# > 0 ? 1 : 0))
sizes=("$@")
((${#sizes[@]})) || sizes=(64 256 512)
corenoise=$build/collector/corenoise
work=$(mktemp -d /tmp/corenoise-killed.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Rank N/2 (KILL_RANK) under `timeout -s KILL 20`, the others as they are.
cat >"$work/kill_one.sh" <<'SCRIPT'
#!/bin/sh
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}
if [ "$rank" = "$KILL_RANK" ]; then exec timeout -s KILL 20 "$@"; fi
exec "$@"
SCRIPT
chmod +x "$work/kill_one.sh"

launcher() {
  case $1 in
    openmpi) echo "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --oversubscribe --bind-to none -x OMPI_MCA_mpi_yield_when_idle=1 -x KILL_RANK -n $2" ;;
    mpich) echo "mpiexec.mpich -genv MPIR_CVAR_POLLS_BEFORE_YIELD 1 -genv KILL_RANK $KILL_RANK -n $2" ;;
  esac
}

printf '| family | ranks | exit (124: hung) | wall | spill files | --report: ranks reported, steps |\n'
printf '|---|---|---|---|---|---|\n'
for family in openmpi mpich; do
  for n in "${sizes[@]}"; do
    json=$work/killed-$family-$n.json
    export KILL_RANK=$((n / 2))
    start=$(date +%s.%N)
    rc=0
    # shellcheck disable=SC2046
    timeout -k 10 300 $(launcher "$family" "$n") "$corenoise" job --no-daemon --quiet --json "$json" \
      -- "$work/kill_one.sh" "$build/tests/job/halo_app_$family" --exchange none \
      --allreduce-every 1 --steps 1000000 --step-ms 1 >"$work/log" 2>&1 || rc=$?
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f s", b - a }')
    files=$( (find "$json.ranks" -name 'rank-*.spill' 2>/dev/null || true) | wc -l)
    report="-"
    if "$corenoise" job --report "$json.ranks" --json "$work/report.json" >/dev/null 2>&1; then
      report=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["ranks_reported"], d["steps"])' "$work/report.json")
    fi
    printf '| %s | %d | %d | %s | %d | %s |\n' "$family" "$n" "$rc" "$wall" "$files" "$report"
    rm -rf "$json" "$json.ranks" "$work/report.json"
  done
done
