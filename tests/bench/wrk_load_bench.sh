#!/usr/bin/env bash
# The exporter under load: does a steady ≥ 200 scrapes/s of /metrics cost
# errors, memory, or the probes' repeatability? One corenoised runs rounds
# back to back (matmul and clock, every CPU) through alternating blocks
# without and with wrk scraping /metrics (tests/bench/wrk_load_bench.lua
# paces it: CONNECTIONS × 1000 / DELAY_MS requests/s at most). Printed:
#   - wrk per loaded block: requests/s reached, non-2xx, socket errors,
#     latency; and the totals over all loaded blocks (BLOCKS × SECONDS);
#   - the daemon's VmRSS, sampled every second: start, max, end;
#   - per CPU, the median of corenoise_probe_duration_seconds{probe="matmul"}
#     over the rounds of the unloaded and of the loaded blocks, and their
#     ratio (goal: within 1 %). A round is counted in a block only if it
#     began after the block did.
# A benchmark: it prints figures and does not judge. It holds
# /tmp/corenoise-measure.lock while it measures, so measurements on one
# machine do not overlap.
#
#   tests/bench/wrk_load_bench.sh [CORENOISED] [BLOCKS] [SECONDS] [CONNECTIONS] [DELAY_MS]
#   e.g. tests/bench/wrk_load_bench.sh build/daemon/corenoised 4 15 4 12  (the defaults)
set -euo pipefail
daemon=${1:-build/daemon/corenoised}
blocks=${2:-4}
seconds=${3:-15}
connections=${4:-4}
delay_ms=${5:-12}
here=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "wrk not found (deploy/dev-setup.sh --tests installs it)" >&2; exit 1; }

dir=$(mktemp -d)
pid=
sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

exec 9>/tmp/corenoise-measure.lock
flock 9

"$daemon" --config /dev/null --listen 127.0.0.1:0 --socket "$dir/ctl.sock" --state-dir "$dir" \
  --interval 0.2 --interval-spread 0 --concurrent-every 0 --busy-policy probe \
  --probes matmul,clock 2>"$dir/log" &
pid=$!
for _ in $(seq 200); do
  port=$(sed -n 's/.*exporter listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$dir/log" >&2; exit 1; }
url="http://127.0.0.1:$port/metrics"

# VmRSS every second, for the whole run.
( while kill -0 "$pid" 2>/dev/null; do
    awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null
    sleep 1
  done ) >"$dir/rss" &
sampler=$!

rounds_now() {
  curl -s "$url" | awk '$1 == "corenoise_rounds_total{mode=\"isolated\"}" { print $2 }'
}
# Waits for the first round, then lets one more pass (a warm start).
until [ "$(rounds_now)" ] && [ "$(rounds_now)" != 0 ]; do sleep 0.2; done
sleep 2

# Collects, until $1 (epoch seconds), each new round's matmul figure per CPU
# as "CONDITION CPU SECONDS" lines; the round in progress when the block
# began is skipped.
collect() {
  local until=$1 condition=$2 first last now
  first=$(rounds_now)
  last=$first
  while [ "$(date +%s.%N)" \< "$until" ]; do
    text=$(curl -s "$url")
    now=$(awk '$1 == "corenoise_rounds_total{mode=\"isolated\"}" { print $2 }' <<<"$text")
    if [ -n "$now" ] && [ "$now" != "$last" ]; then
      last=$now
      # The first round to finish may have begun before the block.
      if awk -v a="$now" -v b="$first" 'BEGIN { exit !(a > b + 1) }'; then
        awk -v c="$condition" -F'[{}" ]+' \
          '/^corenoise_probe_duration_seconds\{/ && /probe="matmul"/ && /mode="isolated"/ {
             for (i = 2; i < NF; i += 2) if ($i == "cpu=") cpu = $(i + 1)
             print c, cpu, $NF }' <<<"$text" >>"$dir/figures"
      fi
    fi
    sleep 0.1
  done
}

: >"$dir/figures"
for block in $(seq "$blocks"); do
  end=$(awk -v s="$seconds" -v n="$(date +%s.%N)" 'BEGIN { printf "%.3f", n + s }')
  collect "$end" unloaded
  end=$(awk -v s="$seconds" -v n="$(date +%s.%N)" 'BEGIN { printf "%.3f", n + s }')
  WRK_DELAY_MS=$delay_ms wrk -t1 -c"$connections" -d"${seconds}s" --timeout 5s \
    -s "$here/wrk_load_bench.lua" "$url" >"$dir/wrk.$block" 2>&1 &
  wrk_pid=$!
  collect "$end" loaded
  wait "$wrk_pid"
  grep '^WRK ' "$dir/wrk.$block" | sed "s/^WRK /block $block: /"
done
kill "$sampler" 2>/dev/null || true
sampler=

echo
echo "corenoised under wrk -t1 -c$connections, ${delay_ms} ms between requests per connection:"
cat "$dir"/wrk.* | grep '^WRK ' | awk '{
    for (i = 2; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] += kv[2] }
    if ($0 ~ /max_ms/) { split($NF, kv, "="); if (kv[2] > max) max = kv[2] }
  } END {
    printf "  %d requests in %.1f s of load: %.1f requests/s; non-2xx %d; socket errors: connect %d, read %d, write %d, timeout %d; worst latency %.1f ms\n",
      v["requests"], v["seconds"], v["requests"] / v["seconds"], v["non2xx"],
      v["connect"], v["read"], v["write"], v["timeout"], max
  }'
awk '{ if (NR == 1) start = $1; if ($1 > max) max = $1; end = $1 }
  END { printf "  VmRSS of corenoised (every second, %d samples): start %.1f MB, max %.1f MB, end %.1f MB\n",
        NR, start / 1024, max / 1024, end / 1024 }' "$dir/rss"
echo "  matmul figure per CPU (median of corenoise_probe_duration_seconds{probe=\"matmul\"}), $blocks blocks of ${seconds} s each way:"
printf "  %4s %8s %14s %8s %14s %8s\n" cpu rounds unloaded_ms rounds loaded_ms ratio
python3 - "$dir/figures" <<'PY'
import statistics, sys
figures = {}
for line in open(sys.argv[1]):
    condition, cpu, value = line.split()
    figures.setdefault(int(cpu), {}).setdefault(condition, []).append(float(value))
for cpu in sorted(figures):
    a = figures[cpu].get("unloaded", [])
    b = figures[cpu].get("loaded", [])
    if not a or not b:
        print(f"  {cpu:4d} no figures for both conditions")
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"  {cpu:4d} {len(a):8d} {ma * 1e3:14.4f} {len(b):8d} {mb * 1e3:14.4f} {mb / ma:8.4f}")
PY
