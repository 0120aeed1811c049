#!/usr/bin/env bash
# What tracing the detour windows costs (docs/performance.md, "Named
# culprits: the cost of tracing"): probe rounds of this machine's CPUs
# with --trace off and --trace on, alternated side by side so that the
# host's own spells fall on both alike, and per mode the median noise ratio
# of each CPU, how often its verdict was not ok, and the median round
# duration; and, per CPU, the mean of the pairs' differences (on − off)
# with its 95 % interval, which is what tells a cost from the VM's drift.
# Goals: noise ratios unchanged within 0.5 point, verdicts as often ok,
# round duration within 5 %. MODE: isolated (the probe's default: one
# window at a time, recording switched per window) or concurrent (every
# CPU at once, the round recorded whole).
#
#   sudo tests/bench/trace_cost.sh [BUILD_DIR] [PAIRS] [MODE]    (as root: tracefs)
set -euo pipefail
build=${1:-build}
pairs=${2:-20}
mode_of_rounds=${3:-isolated}
corenoise="$build/collector/corenoise"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
((EUID == 0)) || { echo "trace_cost: needs root (tracefs)" >&2; exit 2; }

for i in $(seq "$pairs"); do
  # Which goes first alternates: neither mode always follows the other.
  if ((i % 2)); then order="off on"; else order="on off"; fi
  for mode in $order; do
    "$corenoise" probe --mode "$mode_of_rounds" --trace "$mode" --confirm no \
      --json "$dir/$mode.$i.json" --quiet >/dev/null || true
  done
done

python3 - "$dir" "$pairs" "$mode_of_rounds" <<'PY'
import json, math, statistics, sys
dir, pairs, mode_of_rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {m: [json.load(open(f"{dir}/{m}.{i}.json")) for i in range(1, pairs + 1)] for m in ("off", "on")}
assert all(r["trace"] == "on" for r in runs["on"]), "--trace on did not trace"
cpus = [c["cpu"] for c in runs["off"][0]["cpus"] if "detour" in c]
print(f"{pairs} pairs of {mode_of_rounds} rounds, --trace off and on alternated, on {len(cpus)} CPUs")
for cpu in cpus:
    noise = {m: [next(c for c in r["cpus"] if c["cpu"] == cpu)["detour"]["noise_ratio"] for r in runs[m]] for m in runs}
    off, on = statistics.median(noise["off"]), statistics.median(noise["on"])
    # Rounds of one mode differ by chance too: what tracing may not change
    # is how often a verdict is anything but ok.
    states = {m: [next(c for c in r["cpus"] if c["cpu"] == cpu)["state"] for r in runs[m]] for m in runs}
    not_ok = {m: sum(1 for s in states[m] if s != "ok") for m in runs}
    which = {m: ", ".join(f"{s} {states[m].count(s)}" for s in sorted(set(states[m]) - {"ok"})) or "none" for m in runs}
    # Each pair ran back to back: its difference cancels the host's spells.
    diffs = [b - a for a, b in zip(noise["off"], noise["on"])]
    mean = statistics.mean(diffs)
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
    print(f"cpu {cpu}: median noise ratio off {100*off:.2f} %, on {100*on:.2f} % ({100*(on-off):+.2f} points); "
          f"pairs' mean difference {100*mean:+.2f} points (95 % interval {100*(mean-half):+.2f} to {100*(mean+half):+.2f}); "
          f"not ok in {not_ok['off']} ({which['off']}) and {not_ok['on']} ({which['on']}) of {pairs} rounds")
duration = {m: statistics.median(r["rounds"][0]["duration_seconds"] for r in runs[m]) for m in runs}
print(f"median round duration: off {duration['off']:.3f} s, on {duration['on']:.3f} s "
      f"(ratio {duration['on']/duration['off']:.3f})")
PY
