#!/usr/bin/env bash
# `corenoise sweep --rank-per-core` and `corenoise collect`'s reduction on
# hundreds of real ranks, oversubscribed on this machine. MPICH is told
# that every two ranks are a node of their own (MPIR_CVAR_NUM_CLIQUES), so
# a job of N ranks is N/2 nodes of 2 cores:
#
# - sweep: the real command, every rank probing its core (the matmul
#   alone, 3 samples, isolated: the round is not what is measured), every
#   node's leader reducing as it would on N/2 hosts;
# - collect: reduction_bench, collect's reduce_reports() with every rank
#   the leader of a synthetic 128-core node (N nodes).
#
# Per size: the exit status, the nodes and cores in the report, rank 0's
# peak RSS (GNU time around rank 0 alone), the payload bytes each leader
# sent in the reductions (min-max over the leaders: flat in N is the
# claim), and the wall time. Ranks yield at every poll
# (MPIR_CVAR_POLLS_BEFORE_YIELD=1): N busy-polling ranks on 2 CPUs would
# make every collective wait out N time slices. Figures only: never fails
# on one (docs/scaling.md quotes them). Run it alone.
#
#   tests/bench/sweep_scale_bench.sh [BUILD_DIR] [RANKS...]   (defaults: build 64 128 256 512)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift $(($# > 0 ? 1 : 0))
sizes=("$@")
((${#sizes[@]})) || sizes=(64 128 256 512)
corenoise=$build/collector/corenoise
reduction_bench=$build/collector/reduction_bench
for tool in mpiexec.mpich jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "sweep_scale_bench.sh: needs $tool" >&2; exit 2; }
done
[[ -x $corenoise ]] || { echo "sweep_scale_bench.sh: no $corenoise (build first)" >&2; exit 2; }
[[ -x $reduction_bench ]] || { echo "sweep_scale_bench.sh: build reduction_bench first (-DCORENOISE_BUILD_BENCHMARKS=ON)" >&2; exit 2; }
work=$(mktemp -d /tmp/corenoise-sweep-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Rank 0 under GNU time (its peak RSS into $work/rss), the others as they are.
rank0_rss=$PWD/tests/bench/rank0_rss.sh
export RSS_FILE=$work/rss

# run NODES RANKS OUT COMMAND...: the job, its wall time in $work/wall.
run() {
  local nodes=$1 ranks=$2 out=$3 start
  shift 3
  start=$EPOCHREALTIME
  timeout -k 10 1800 mpiexec.mpich -n "$ranks" -genv MPIR_CVAR_NUM_CLIQUES "$nodes" \
    -genv MPIR_CVAR_POLLS_BEFORE_YIELD 1 -genv MPIR_CVAR_CH4_NUM_VCIS 1 -genv RSS_FILE "$RSS_FILE" \
    "$rank0_rss" "$@" >"$out" 2>&1 || echo "exit $?" >>"$out"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f s", b - a}' >"$work/wall"
}

# Rank 0's peak RSS: GNU time's last line (a failed command's comes after
# "Command exited with non-zero status N").
rss() { tail -n 1 "$work/rss" 2>/dev/null | awk '{printf "%.1f MB", $1 / 1024}'; }

# The leaders' bytes, min-max, from --verbose's "sent B bytes in the reductions".
sent_range() {
  grep -o 'sent [0-9]* bytes in the reductions' "$1" | awk '{print $2}' | sort -n |
    awk 'NR == 1 {lo = $1} {hi = $1; n++} END {if (n) printf "%d-%d (%d leaders)", lo, hi, n; else printf "none"}'
}

echo "| command | ranks | nodes | exit | in the report | rank 0 peak RSS | bytes per leader | wall |"
echo "|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  ((n >= 2 && n % 2 == 0)) || { echo "sweep_scale_bench.sh: $n: an even number of ranks" >&2; exit 2; }
  nodes=$((n / 2))
  run "$nodes" "$n" "$work/sweep.out" "$corenoise" sweep --rank-per-core --probes matmul \
    --samples 3 --mode isolated --confirm no --verbose --json "$work/sweep.json"
  status=$(grep -o 'exit [0-9]*$' "$work/sweep.out" | tail -1 || true)
  reported=$(jq -r '"\(.nodes | length) nodes, \([.nodes[] | .probed_cores] | add) cores"' "$work/sweep.json" 2>/dev/null || echo "no report")
  echo "| sweep --rank-per-core | $n | $nodes | ${status:-exit 0} | $reported | $(rss) | $(sent_range "$work/sweep.out") | $(cat "$work/wall") |"
  [[ -z $status ]] || tail -n 5 "$work/sweep.out" | sed 's/^/    /'
  rm -f "$work/rss" "$work/sweep.json"

  run "$n" "$n" "$work/collect.out" "$reduction_bench" 1
  status=$(grep -o 'exit [0-9]*$' "$work/collect.out" | tail -1 || true)
  echo "| collect's reduction (reduction_bench) | $n | $n | ${status:-exit 0} | $n nodes of 128 cores | $(rss) | $(sed -n 's|.*bytes/rank min \([0-9]*\) max \([0-9]*\).*|\1-\2|p' "$work/collect.out") | $(cat "$work/wall") |"
  grep -v '^$' "$work/collect.out" | tail -n 3 | sed 's/^/    /'
  rm -f "$work/rss"
done
