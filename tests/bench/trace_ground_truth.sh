#!/usr/bin/env bash
# The named culprits against known noise (docs/verdicts.md, "Named
# culprits"): ROUNDS traced probe rounds of CPUs 0 and 1 with a SCHED_FIFO
# injector busy 1 ms in every 10 ms on CPU 1 -- per CPU its verdict, its
# noise ratio and the share of its window charged to the injector -- then
# ROUNDS rounds of the clean machine, with each clean CPU's lost time split
# by culprit kind and the share charged at all. Figures, not a pass/fail.
#
#   sudo tests/bench/trace_ground_truth.sh [BUILD_DIR] [ROUNDS]    (as root: tracefs)
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
((EUID == 0)) || { echo "trace_ground_truth: needs root (tracefs)" >&2; exit 2; }
corenoise="$build/collector/corenoise"

# One traced round of CPUs 0 and 1, printed as FIGURES says: "injector"
# (each CPU's verdict, noise and the share charged to noise_injector) or
# "kinds" (each CPU's lost time split by culprit kind, and how much of it
# was charged at all).
round() {
  "$corenoise" probe --cpus 0,1 --trace on --confirm no --json - 2>/dev/null |
    FIGURES=$1 python3 -c '
import json, os, sys
out = []
for c in json.load(sys.stdin)["cpus"]:
    d = c["detour"]
    culprits = d["trace"]["culprits"]
    if os.environ["FIGURES"] == "injector":
        mine = [x for x in culprits if x.get("name") == "noise_injector"]
        share = sum(x["seconds"] for x in mine) / d["window_seconds"]
        out.append("cpu%d %s, noise %.1f %%, injector %.1f %% (%s)" % (c["cpu"], c["state"],
                   100 * d["noise_ratio"], 100 * share, mine[0]["text"] if mine else "not named"))
    else:
        lost = d["total_seconds"]
        kinds = {}
        for x in culprits:
            kinds[x["kind"]] = kinds.get(x["kind"], 0) + x["seconds"]
        split = ", ".join("%s %.0f %%" % (k, 100 * v / lost)
                          for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
        out.append("cpu%d noise %.1f %%: %s (charged %.1f %%)" % (c["cpu"], 100 * d["noise_ratio"],
                   split, 100 * sum(kinds.values()) / lost))
print("  " + " | ".join(out))' || true
}

"$build/tests/noise_injector" --cpu 1 --busy-ms 1 --period-ms 10 --seconds 600 >/dev/null &
injector=$!
trap 'kill "$injector" 2>/dev/null || true' EXIT
sleep 0.5
echo "10 % SCHED_FIFO on CPU 1 (noise_injector):"
for _ in $(seq "$rounds"); do round injector; done
kill "$injector" 2>/dev/null || true
wait "$injector" 2>/dev/null || true

echo "clean:"
for _ in $(seq "$rounds"); do round kinds; done
