#!/usr/bin/env bash
# Rank per node against rank per core, side by side with known noise: a
# SCHED_FIFO thread busy 1 ms in every 10 ms on CPU 1, and N alternating
# isolated sweeps of each layout. Prints one line per sweep (worst core, its
# state and expected slowdown, both CPUs' expected slowdowns, wall time) and
# a count per layout of the sweeps that ranked CPU 1 worst.
#
#   tests/bench/sweep_layouts.sh [BUILD_DIR] [N]     (defaults: build 20)
set -euo pipefail
build=${1:-build}
runs=${2:-20}
corenoise=$build/collector/corenoise
out=$(mktemp /tmp/sweep_layouts.XXXXXX.json)
"$build/tests/noise_injector" --cpu 1 --busy-ms 1 --period-ms 10 --seconds $((runs * 4 + 10)) >/dev/null &
injector=$!
trap 'kill $injector 2>/dev/null; rm -f "$out"' EXIT
sleep 0.5
declare -A found=([node]=0 [core]=0)
for ((i = 0; i < runs; i++)); do
  for layout in node core; do
    if [[ $layout == node ]]; then
      cmd=(mpiexec.mpich -n 1 "$corenoise" sweep)
    else
      cmd=(mpiexec.mpich -n 2 -bind-to core "$corenoise" sweep --rank-per-core)
    fi
    start=$(date +%s.%N)
    rc=0
    "${cmd[@]}" --mode isolated --full --quiet --json "$out" >/dev/null 2>&1 || rc=$?
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    line=$(python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["worst"][0]
cells = {c["cpu"]: c for c in d["cells"][0]["cores"]}
print(f"worst=cpu{w['cpu']} {w['state']:8} cpu0={cells[0]['expected_slowdown']:.3f} "
      f"cpu1={cells[1]['expected_slowdown']:.3f}")
PY
)
    [[ $line == worst=cpu1* ]] && found[$layout]=$((found[$layout] + 1))
    printf '%-5s exit=%s wall=%.2fs %s\n' "$layout" "$rc" "$wall" "$line"
  done
done
echo "CPU 1 ranked worst: rank per node ${found[node]}/$runs, rank per core ${found[core]}/$runs"
