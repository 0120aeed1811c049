#!/usr/bin/env bash
# What corenoised costs the node at its default settings: CPU time per hour
# as a share of all CPUs (goal <= 0.1 %) and peak RSS (goal <= 32 MB).
#
# A default round comes every 300 s, so an hour holds 12; rather than wait
# an hour, this measures the CPU time of N rounds run back to back (at the
# default probe settings) and the idle cost of the event loop between
# rounds, and adds them up for an hour.
#
#   tests/bench/daemon_cost.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-10}
daemon="$build/daemon/corenoised"
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
ticks=$(getconf CLK_TCK)
cpus=$(nproc)

cpu_seconds() {  # on-CPU time of the whole process, ns-exact (schedstat), in seconds
  # Threads that ended (round and probe threads) are in the process's own
  # stat; the live ones are summed from their schedstat.
  awk -v t="$ticks" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

live_cpu_seconds() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s / 1e9 }'
}

rounds_done() {
  "$build/collector/corenoise" status --json --socket "$dir/ctl.sock" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rounds"].get("isolated",{}).get("count",0))'
}

# 1. Rounds back to back at the default probe settings.
"$daemon" --config /dev/null --listen 127.0.0.1:0 --socket "$dir/ctl.sock" --state-dir "$dir" \
  --interval 0.1 --interval-spread 0 --concurrent-every 0 --busy-policy probe 2>"$dir/log" &
pid=$!
until [ -S "$dir/ctl.sock" ]; do sleep 0.05; done
start=$(cpu_seconds $pid)
until [ "$(rounds_done)" -ge "$rounds" ]; do sleep 0.2; done
per_round=$(awk -v a="$start" -v b="$(cpu_seconds $pid)" -v n="$rounds" 'BEGIN { print (b - a) / n }')
rss_rounds=$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$pid/status")
kill $pid; wait $pid 2>/dev/null || true

# 2. Idle between rounds: 30 s with no round due.
"$daemon" --config /dev/null --listen 127.0.0.1:0 --socket "$dir/ctl.sock" --state-dir "$dir" \
  --interval 86400 2>>"$dir/log" &
pid=$!
until [ -S "$dir/ctl.sock" ]; do sleep 0.05; done
sleep 1
a=$(live_cpu_seconds $pid)
sleep 30
idle_per_hour=$(awk -v a="$a" -v b="$(live_cpu_seconds $pid)" 'BEGIN { print (b - a) * 120 }')
kill $pid; wait $pid 2>/dev/null || true

awk -v r="$per_round" -v i="$idle_per_hour" -v c="$cpus" -v rss="$rss_rounds" 'BEGIN {
  hour = 12 * r + i
  printf "CPU time per default round (%d CPUs, isolated): %.3f s\n", c, r
  printf "idle CPU time per hour: %.3f s\n", i
  printf "CPU time per hour at interval 300 s: %.2f s = %.4f %% of the node (goal <= 0.1 %%)\n", hour, 100 * hour / (3600 * c)
  printf "peak RSS: %.1f MB (goal <= 32 MB)\n", rss
}'
