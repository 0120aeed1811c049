#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# cluster_start_stop.sh: starts and stops the test cluster of
# tests/tools/cluster.sh RUNS times in a row (default 10) and prints, for
# each run, how long the start and the stop took and what was left behind
# (processes, mounts, network namespaces, links, cgroups, directories,
# listening ports); the exit status is 1 if any start failed or anything
# was left. As root, from the source tree, after a build:
#   tests/bench/cluster_start_stop.sh [RUNS] [--nodes N]
set -uo pipefail
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source=../tools/cluster.sh
. "$here/../tools/cluster.sh"
runs=${1:-10}
shift || true
cluster_require
bad=0
for ((run = 1; run <= runs; run++)); do
  t0=$(date +%s.%N)
  if ! cluster_start "$@" 2>"/tmp/cluster_start_stop.$$.err"; then
    echo "run $run: the start failed: $(tail -n 5 "/tmp/cluster_start_stop.$$.err")"
    bad=1
  fi
  t1=$(date +%s.%N)
  dir=$CLUSTER_DIR port=${CLUSTER_PROMETHEUS##*:}
  cluster_stop
  t2=$(date +%s.%N)
  left=$(cluster_leftovers "$dir" "$port" | paste -sd';')
  printf 'run %2d: start %5.1f s, stop %4.1f s, left behind: %s\n' "$run" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "${left:-nothing}"
  [[ -z $left ]] || bad=1
done
rm -f "/tmp/cluster_start_stop.$$.err"
exit "$bad"
