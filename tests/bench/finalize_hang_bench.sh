#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# finalize_hang_bench.sh: how often a 2-rank MPICH job across two hosts
# hangs (most likely in MPICH 4.0's own MPI_Finalize on UCX,
# collector/mpi/mpich_ucx_finalize.h), plain and under `corenoise job`.
#
# It starts the test cluster of tests/tools/cluster.sh as
# tests/cluster/cluster_test.sh's `start` case does (two nodes, each a
# network namespace with one CPU, a corenoised and a slurmd) and runs
# tests/job/halo_app_mpich, one rank per node, through the launcher of that
# test's MPICH cases (mpiexec.mpich over the cluster's ssh, UCX over TCP on
# eth0), RUNS times in each mode, the modes interleaved (their order
# rotated every run):
#   plain          the program alone
#   job            corenoise job --json FILE -- PROGRAM, as cluster_test.sh's
#                  job_case runs it (each node's corenoised is asked)
#   job-no-daemon  the same with --no-daemon
# With --noise DUTY, `corenoise inject` takes DUTY of node 2's CPU for the
# whole benchmark, as cluster_test.sh's job_case does (0.3 there) with the
# health check only reporting.
# A run that has not ended after --timeout seconds (a normal one takes ~2 s)
# is a hang: the ranks' stacks are taken with gdb (is either rank inside
# MPI_Finalize?), whether the job's report was already complete is noted,
# and the job is killed. Prints one line a run and a table: runs,
# completions, hangs (and of those, in MPI_Finalize; after a complete
# report), other failures, the median wall time of the completed runs, and
# a two-sided Fisher exact test of each library mode's hangs against
# plain's. The cluster is stopped on exit, whatever happened, and what it
# left behind is listed (nothing, normally).
#
# One test cluster at a time on a machine: its names (network namespaces,
# cgroups, the bridge) are fixed, a start removes whatever another cluster
# left, live or not, and a stop removes those names whoever made them. So
# this script does not start while another cluster is there (--take-over
# starts anyway, removing it, as cluster_start does), stops early, keeping
# the figures of the runs before, when its own cluster is taken down
# meanwhile (another start), and then leaves the names alone.
#
# Figures only: the exit status is 0, or 1 when the cluster did not start
# or was taken down, 2 when it cannot start (not root, a program missing).
# As root, from the source tree, after a build (corenoise, corenoised,
# corenoise_job_mpich, corenoise_mpi_mpich, halo_app_mpich):
#   tests/bench/finalize_hang_bench.sh [RUNS] [--timeout S] [--modes M,M,...]
#       [--noise DUTY] [--build DIR] [--logs DIR] [--take-over]
#       [-- PROGRAM-ARGUMENTS...]
# RUNS defaults to 30 per mode, --timeout to 30, --modes to
# plain,job,job-no-daemon, the program's arguments to --steps 300. The
# launchers' output and the hung ranks' stacks are kept in --logs (default
# a new /tmp/finalize_hang_bench.XXXXXX). About 2 s a run without hangs,
# 35 s with one.
set -Eeuo pipefail
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
source_dir=$(readlink -f "$here/../..")
# shellcheck source=../tools/cluster.sh
. "$here/../tools/cluster.sh"

runs=30 hang_after=30 noise='' take_over=no build=$source_dir/build logs='' modes_list=plain,job,job-no-daemon
program_args=(--steps 300)
if [[ ${1:-} =~ ^[0-9]+$ ]]; then runs=$1 && shift; fi
while (($#)); do
  case $1 in
    --timeout) hang_after=$2 && shift 2 ;;
    --modes) modes_list=$2 && shift 2 ;;
    --noise) noise=$2 && shift 2 ;;
    --build) build=$(readlink -f "$2") && shift 2 ;;
    --logs) logs=$2 && shift 2 ;;
    --take-over) take_over=yes && shift ;;
    --) shift && program_args=("$@") && break ;;
    -h | --help) sed -n '3,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//' && exit 0 ;;
    *) echo "finalize_hang_bench: unknown argument '$1' (see --help)" >&2 && exit 1 ;;
  esac
done
IFS=, read -ra modes <<<"$modes_list"
for mode in "${modes[@]}"; do
  [[ $mode =~ ^(plain|job|job-no-daemon)$ ]] || { echo "finalize_hang_bench: unknown mode '$mode'" >&2 && exit 1; }
done
[[ $hang_after =~ ^[1-9][0-9]*$ ]] || { echo "finalize_hang_bench: --timeout: expected whole seconds, got '$hang_after'" >&2 && exit 1; }
corenoise=$build/collector/corenoise
corenoised=$build/daemon/corenoised
program=$build/tests/job/halo_app_mpich
for file in "$corenoise" "$corenoised" "$program" "$build/collector/libcorenoise-job-mpich.so"; do
  [[ -x $file || -f $file ]] || { echo "finalize_hang_bench: $file was not built" >&2 && exit 1; }
done
command -v mpiexec.mpich >/dev/null || { echo "SKIP: no mpiexec.mpich (apt-get install mpich)" >&2 && exit 2; }
command -v gdb >/dev/null || { echo "SKIP: no gdb (apt-get install gdb)" >&2 && exit 2; }
cluster_require
other=$( (ls -d "${TMPDIR:-/tmp}"/corenoise-cluster.* 2>/dev/null; ip netns list 2>/dev/null |
  awk '$1 ~ /^cn-node[0-9]+$/ {print "network namespace " $1}') | paste -sd' ')
if [[ -n $other && $take_over == no ]]; then
  echo "finalize_hang_bench: another test cluster is here ($other): one at a time;" \
    "stop it (tests/tools/cluster.sh --dir DIR stop), or give --take-over to remove it" >&2
  exit 1
fi
[[ -n $logs ]] || logs=$(mktemp -d /tmp/finalize_hang_bench.XXXXXX)
mkdir -p "$logs"

launcher_pid='' noise_pid=''
trap 'echo "finalize_hang_bench: line $LINENO: a command exited $?" >&2' ERR
trap 'exit 1' TERM INT
# On any exit: the job in flight, then the whole cluster (cluster_test.sh's
# stop), and a list of what it left behind.
# shellcheck disable=SC2317 # run by the EXIT trap
finish() {
  trap - ERR
  set +e
  if [[ -n $launcher_pid ]]; then
    kill "$launcher_pid" 2>/dev/null
    wait "$launcher_pid" 2>/dev/null
  fi
  if [[ -n $noise_pid ]]; then
    kill "$noise_pid" 2>/dev/null
    wait "$noise_pid" 2>/dev/null
  fi
  # Not a cluster that another start has removed (its directory with it):
  # the names are that cluster's now.
  if [[ -n $CLUSTER_DIR && -d $CLUSTER_DIR ]]; then
    local dir=$CLUSTER_DIR port=${CLUSTER_PROMETHEUS##*:} left
    cluster_stop
    left=$(cluster_leftovers "$dir" "$port" 2>/dev/null | paste -sd";")
    echo "cluster stopped; left behind: ${left:-nothing}" >&2
  fi
}
trap finish EXIT

# As cluster_test.sh's case_start.
started=$SECONDS
cluster_start --corenoise "$corenoise" --corenoised "$corenoised" --healthcheck-interval 3 \
  --node-daemon-arg 2:--busy-threshold=0.9 || {
  cluster_logs
  echo "finalize_hang_bench: the cluster did not start" >&2
  exit 1
}
echo "cluster up in $((SECONDS - started)) s in $CLUSTER_DIR; logs in $logs"
# The report is written by rank 0 on node 1: where every node and this
# script see it.
shared=$(mktemp -d "$CLUSTER_DIR/shared/bench.XXXXXX")
printf '%s\n' "${CLUSTER_ADDRS[@]}" >"$shared/hosts"
if [[ -n $noise ]]; then
  # cluster_test.sh's report_only yes and noise_on_node2 DUTY.
  echo "CORENOISE_HEALTHCHECK_REPORT_ONLY=yes" >>"$CLUSTER_DIR/corenoise-slurm"
  cluster_spawn 2 "$corenoise" inject --cpus "${CLUSTER_CPUS[2]}" --duty "$noise" --seconds 86400 >"$logs/inject.out" 2>&1
  noise_pid=$cluster_spawned
  for ((k = 0; k < 100; k++)); do
    grep -q '^ready' "$logs/inject.out" && break
    sleep 0.1
  done
  grep -q '^ready' "$logs/inject.out" || { echo "finalize_hang_bench: corenoise inject was not ready" >&2 && exit 1; }
fi

# launch OUT COMMAND...: cluster_test.sh's mpich_hosts (its environment and
# arguments), in the background, its pid in $launcher_pid; the backstop
# timeout well past --timeout, which this script's own watch enforces.
launch() {
  local out=$1
  shift
  UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 timeout -k 5 "$((hang_after + 60))" mpiexec.mpich -f "$shared/hosts" -ppn 1 -n 2 \
    -launcher ssh -launcher-exec "$CLUSTER_DIR/bin/ssh" -localhost "$cluster_subnet.1" "$@" </dev/null >"$out" 2>&1 &
  launcher_pid=$!
}

# node_pids NAME...: the processes on the nodes (their cpusets) whose
# command name is one of NAME.
node_pids() {
  local i pid comm want
  for i in "${!CLUSTER_NODES[@]}"; do
    while read -r pid; do
      comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
      for want in "$@"; do
        [[ $comm == "$want" ]] && echo "$pid"
      done
    done <"$cluster_cgroup/${CLUSTER_NODES[i]}/cgroup.procs"
  done
  return 0
}

# stacks FILE: every thread's stack of each rank still running, into FILE;
# prints "R/F", R ranks found of which F are inside MPI_Finalize.
stacks() {
  local file=$1 pid ranks=0 finalizing=0 one
  : >"$file"
  for pid in $(node_pids "${program##*/}"); do
    one=$(timeout 20 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'thread apply all bt' 2>&1 || true)
    printf '=== pid %s on %s\n%s\n' "$pid" "$(readlink "/proc/$pid/ns/uts" 2>/dev/null)" "$one" >>"$file"
    ranks=$((ranks + 1))
    grep -qE ' (P?MPI_Finalize|mpi_finalize_)' <<<"$one" && finalizing=$((finalizing + 1))
  done
  echo "$ranks/$finalizing"
}

# intact: this script's cluster is still there (its directory, each
# node's namespace holder).
intact() {
  local i
  [[ -d $CLUSTER_DIR ]] || return 1
  for i in "${!CLUSTER_NODES[@]}"; do
    kill -0 "$(cat "$CLUSTER_DIR/${CLUSTER_NODES[i]}/holder.pid" 2>/dev/null)" 2>/dev/null || return 1
  done
}

# One run of MODE: appends "mode outcome wall report ranks-left/in-finalize"
# to $results; fails, recording nothing, when the cluster was taken down.
results=$logs/results
: >"$results"
run_one() {
  local mode=$1 run=$2 out=$logs/$1-$2.out json=$shared/$1-$2.json
  local -a command=("$program" "${program_args[@]}")
  case $mode in
    job) command=("$corenoise" job --json "$json" -- "${command[@]}") ;;
    job-no-daemon) command=("$corenoise" job --no-daemon --json "$json" -- "${command[@]}") ;;
  esac
  local t0 t1 rc=0 outcome wall report=- where=- note='' lines
  t0=$(date +%s.%N)
  launch "$out" "${command[@]}"
  while kill -0 "$launcher_pid" 2>/dev/null &&
    awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$hang_after" 'BEGIN {exit !(b - a < s)}'; do
    sleep 0.1
  done
  if kill -0 "$launcher_pid" 2>/dev/null; then
    t1=$(date +%s.%N)
    outcome=hang
    # What the report said when the hang was called, before anything is killed.
    if [[ $mode != plain ]]; then
      report=none
      if [[ -s $json ]]; then
        report=incomplete
        jq -e '.complete == true' "$json" >/dev/null 2>&1 && report=complete
      fi
    fi
    where=$(stacks "$logs/$mode-$run.stacks")
    kill -TERM "$launcher_pid" 2>/dev/null || true
    wait "$launcher_pid" 2>/dev/null || true
    # Whatever of the job the launcher's end did not take down within 3 s.
    local leftover k
    for ((k = 0; k < 30; k++)); do
      leftover=$(node_pids "${program##*/}" hydra_pmi_proxy | paste -sd' ')
      [[ -n $leftover ]] || break
      sleep 0.1
    done
    if [[ -n $leftover ]]; then
      # shellcheck disable=SC2086 # pids
      kill -KILL $leftover 2>/dev/null || true
      note+=" killed what was left: $leftover;"
    fi
  else
    wait "$launcher_pid" || rc=$?
    t1=$(date +%s.%N)
    outcome="done"
    ((rc == 0)) || outcome=failed-$rc
    if [[ $mode != plain ]]; then
      report=none
      [[ -s $json ]] && report=incomplete
      jq -e '.complete == true' "$json" >/dev/null 2>&1 && report=complete
    fi
  fi
  launcher_pid=''
  # The program's rank 0 prints one checksum line before MPI_Finalize (seen
  # once twice, in a run that completed; shown when it is not one).
  lines=$(grep -c 'checksum' "$out" || true)
  ((lines == 1)) || note+=" $lines checksum lines;"
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  if ! intact; then
    echo "run $run $mode: the cluster was taken down meanwhile (another cluster started?);" \
      "this run is not counted, and the benchmark stops" >&2
    return 1
  fi
  # (where: the ranks still there at the hang / those inside MPI_Finalize)
  echo "$mode $outcome $wall $report $where" >>"$results"
  [[ $where == - ]] || note=" ranks left $where in MPI_Finalize;$note"
  printf 'run %2d %-14s %-9s %6.2f s  report %-10s%s\n' "$run" "$mode" "$outcome" "$wall" "$report" "$note"
  rm -f -- "$json"
  rm -rf -- "$json.ranks"
}

dpkg-query -W -f '${Package} ${Version}\n' mpich libmpich12 libucx0 2>/dev/null | paste -sd';' || true
echo "$runs runs per mode ($modes_list), interleaved; a hang: not ended after $hang_after s; noise on node 2: ${noise:-none}"
echo "program: ${program#"$source_dir"/} ${program_args[*]}"
status=0
for ((run = 1; run <= runs && status == 0; run++)); do
  for ((k = 0; k < ${#modes[@]}; k++)); do
    run_one "${modes[(run + k - 1) % ${#modes[@]}]}" "$run" || { status=1 && break; }
  done
done

echo
python3 - "$results" "${modes[@]}" <<'PY'
import math, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
modes = sys.argv[2:]

def fisher(a, b, c, d):
    """Two-sided Fisher exact test of [[a, b], [c, d]]."""
    n, r1, c1 = a + b + c + d, a + b, a + c
    def p(x):
        return math.comb(r1, x) * math.comb(n - r1, c1 - x) / math.comb(n, c1)
    observed = p(a)
    lo, hi = max(0, c1 - (n - r1)), min(r1, c1)
    return min(1.0, sum(p(x) for x in range(lo, hi + 1) if p(x) <= observed * (1 + 1e-7)))

print("| mode | runs | completed | hangs | of which in MPI_Finalize | after a complete report | other failures | median wall (completed) | hangs vs plain: Fisher p |")
print("|---|---|---|---|---|---|---|---|---|")
# (hangs, runs without a hang) a mode
count = {m: (sum(1 for r in rows if r[0] == m and r[1] == "hang"),
             sum(1 for r in rows if r[0] == m and r[1] != "hang")) for m in modes}
for mode in modes:
    mine = [r for r in rows if r[0] == mode]
    done = [float(r[2]) for r in mine if r[1] == "done"]
    hangs = [r for r in mine if r[1] == "hang"]
    in_finalize = sum(1 for r in hangs if "/" in r[4] and int(r[4].split("/")[1]) > 0)
    after_report = sum(1 for r in hangs if r[3] == "complete")
    failed = sum(1 for r in mine if r[1].startswith("failed"))
    p = "-"
    if mode != "plain" and "plain" in count:
        p = "%.3g" % fisher(*count[mode], *count["plain"])
    print("| %s | %d | %d | %d | %d | %s | %d | %s | %s |" % (
        mode, len(mine), len(done), len(hangs), in_finalize,
        "-" if mode == "plain" else str(after_report), failed,
        "%.2f s" % statistics.median(done) if done else "-", p))
PY
exit "$status"
