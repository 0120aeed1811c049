#!/bin/bash
# The live reduction against a switch of known time (docs/job.md, "Live"):
# bsp_step_app under `corenoise job --live-interval I` for about TOTAL
# seconds on 2 ranks (one per CPU), with a node corenoised (paused, on a
# socket of its own) taking the ranks' live lines, and `corenoise inject`
# preempting CPU 1 (rank 1's) from ON to OFF seconds into the job. Every 2 s
# it keeps the --live file and the daemon's corenoise_job_live_* series;
# then prints, per epoch, when it came, whom it named first over the job
# and in the epoch's own window, and why, rank 1's pattern (chronic, or its
# bursts with their times), and when each of the daemon's two series (the
# job so far, the newest window) first named rank 1. Figures only: never
# fails on them.
#
#   tests/bench/job_live_switch_bench.sh BUILD [mpich|openmpi] [ON OFF TOTAL INTERVAL]
#       (default: mpich 180 360 600 30)
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD [FAMILY] [ON OFF TOTAL INTERVAL]}" && pwd)
family=${2:-mpich}
on=${3:-180}
off=${4:-360}
total=${5:-600}
interval=${6:-30}
corenoise=$build/collector/corenoise
work=$(mktemp -d /tmp/corenoise-live-switch.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT
if [ "$family" = openmpi ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  launch=(mpirun.openmpi --bind-to core -n 2)
  app=$build/tests/scenario/bsp_step_app_openmpi
else
  launch=(mpiexec.mpich -bind-to core -n 2)
  app=$build/tests/scenario/bsp_step_app
fi

# The node's daemon, paused (a job's CPUs are not probed), on a port of its own.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/daemon/corenoised" --config /dev/null --listen "127.0.0.1:$port" --socket "$work/ctl.sock" \
  --state-dir "$work" --interval 3600 > "$work/daemon.log" 2>&1 &
for _ in $(seq 100); do [ -S "$work/ctl.sock" ] && break; sleep 0.1; done
/usr/bin/python3 - "$work/ctl.sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"command":"pause","seconds":7200}\n'); print("daemon:", s.recv(4096).decode().strip())
PY

# Steps for TOTAL seconds: 200 steps timed first.
steps_per_second=$(cd "$work" && "${launch[@]}" "$app" --steps 200 --step-products 256 --json cal.json > /dev/null &&
  /usr/bin/python3 -c 'import json; d=json.load(open("cal.json")); print(200 / d["wall_seconds"])')
steps=$(/usr/bin/python3 -c "print(int($steps_per_second * $total))")
echo "job: $family, $steps steps (~${total} s), live every ${interval} s; noise on CPU 1 from ${on} s to ${off} s"

cd "$work"
started=$(date +%s.%N)
"${launch[@]}" "$corenoise" job --socket "$work/ctl.sock" --live-interval "$interval" --live live.json \
  --json final.json --quiet -- "$app" --steps "$steps" --step-products 256 > job.out 2> job.err &
job=$!
(sleep "$on"; "$corenoise" inject --cpus 1 --seconds "$((off - on))" --duty 0.3 --period 0.01 > inject.out 2>&1) &
while kill -0 "$job" 2> /dev/null; do
  t=$(/usr/bin/python3 -c "import time; print(f'{time.time() - $started:08.1f}')")
  cp live.json "snap-$t.json" 2> /dev/null || true
  curl -s "http://127.0.0.1:$port/metrics" | grep '^corenoise_job_live' > "metrics-$t.txt" || true
  sleep 2
done
wait "$job" || echo "job exit status $?"

/usr/bin/python3 - "$work" "$on" "$off" "$interval" <<'PY'
import glob, json, os, sys
work, on, off, interval = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
seen, started = set(), None
print("epoch  at(s)  steps  named  window: first late  rank1: cause  pattern")
for path in sorted(glob.glob(os.path.join(work, "snap-*.json"))):
    t = float(os.path.basename(path)[5:-5])
    try:
        d = json.load(open(path))
    except ValueError:
        continue
    if not d.get("live") or d["live"]["epoch"] in seen:
        continue
    seen.add(d["live"]["epoch"])
    r1 = next((r for r in d["ranks"] if r["rank"] == 1), None)
    p = (r1 or {}).get("lateness_pattern") or {}
    stretches = ", ".join(f'{s["start_seconds"]:.0f}-{s["end_seconds"]:.0f} s' for s in p.get("stretches", [])[:4])
    window = d["live"]["window"]  # null at the first epoch after the step bins merged
    late = window["late_ranks"] if window else []
    w = "(not judged)" if window is None else f'{late[0]["rank"]} {late[0]["cause"]}' if late else "-"
    p_w = (late[0].get("lateness_pattern") or {}) if late else {}
    if p_w.get("kind") == "chronic":
        w += f' chronic since {p_w["onset_seconds"]:.0f} s' if p_w.get("onset_seconds") else " chronic"
    print(f'{d["live"]["epoch"]:5d} {t:6.0f} {d["steps"]:7d}  {d["worst_ranks"][:2]!s:8}  {w:36} '
          f'{(r1 or {}).get("cause", "-"):16} {p.get("kind", "-")} '
          f'{"since %.0f s" % p["onset_seconds"] if p.get("kind") == "chronic" else stretches}')
for series in ("corenoise_job_live_wait_caused_seconds", "corenoise_job_live_window_wait_caused_seconds"):
    first = None
    for path in sorted(glob.glob(os.path.join(work, "metrics-*.txt"))):
        t = float(os.path.basename(path)[8:-4])
        text = open(path).read()
        named = [l for l in text.splitlines() if l.startswith(series + '{rank="1"') and 'cause="none"' not in l]
        if first is None and t > on and named:
            first = (t, named)
    print(f"daemon: rank 1 first with a cause in {series} at",
          f"{first[0]:.0f} s ({(first[0] - on) / interval:.1f} cadences after the switch): {first[1]}" if first else "never")
final = json.load(open(os.path.join(work, "final.json")))
r1 = next((r for r in final["ranks"] if r["rank"] == 1), {})
print("final:", final["worst_ranks"][:2], r1.get("cause"), json.dumps(r1.get("lateness_pattern")))
PY
echo "files: $work"
