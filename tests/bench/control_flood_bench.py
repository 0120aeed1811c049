#!/usr/bin/env python3
"""The daemon under a local user's flood (docs/performance.md, "A local
user's flood"): does corenoised keep its rounds, its scrapes and root's
commands on time while one ordinary user sends 1,000 job lines a second and
holds 500 connections trickling a byte every 9 s on the user socket?

Each run starts a real corenoised (rounds every 2 s, isolated, both CPUs) as
Debian's `daemon` user, with or without the flood (as `nobody`), and for
--seconds measures, once a second:
  - a scrape of /metrics (ms),
  - root's `status` on the control socket (ms),
and counts the rounds done meanwhile; then times five of root's `pause`
then `resume` pairs (ms for the pair; a pause cancels the round in progress,
as a job's prolog does, so they come after the rounds are counted). Also
the flood's lines sent and refused by reason, and the daemon's peak RSS
(VmHWM). Runs alternate quiet and flooded; the
table gives the median over runs of each run's median (and p99).

  sudo tests/bench/control_flood_bench.py --build-dir build [--runs 5] [--seconds 30]

Needs root (to run the daemon and the flood as other users). Run it alone:
it judges this machine's speed.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

FLOOD = r'''
import os, socket, sys, time, json
path, rate, hold = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
# The sending connection first: once the held ones fill the user's share,
# the daemon turns away any further connection of this user at the door.
sender = socket.socket(socket.AF_UNIX)
sender.connect(path)

def fill(held):
    """Opens connections until `hold` are open (the daemon closes all but
    the user's share of them at once, and the rest after their line's
    deadline: they are opened again, so the flood keeps knocking)."""
    while len(held) < hold:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            s.setblocking(False)
            held.append(s)
        except OSError:
            break
    return held


held = fill([])
line = (json.dumps({"command": "job", "job_id": "flood", "ended_unix_seconds": 1,
                    "elapsed_seconds": 1, "ranks": 1,
                    "cpus": [{"cpu": 0, "lost_seconds": {"steal": 1}}]}) + "\n").encode()
sent = 0
start = time.monotonic()
last_trickle = start
while True:
    now = time.monotonic()
    target = int((now - start) * rate)
    while sent < target:
        try:
            sender.sendall(line)
        except OSError:
            sender = socket.socket(socket.AF_UNIX)
            sender.connect(path)
            continue
        sent += 1
    try:
        sender.setblocking(False)
        while True:
            chunk = sender.recv(65536)
            if not chunk:
                break
    except BlockingIOError:
        pass
    finally:
        sender.setblocking(True)
    if now - last_trickle >= 9:
        last_trickle = now
        alive = []
        for s in held:
            try:
                s.send(b"{")
                alive.append(s)
            except OSError:
                s.close()
        held = fill(alive)
    sys.stdout.write("%d\n" % sent)
    sys.stdout.flush()
    time.sleep(0.01)
'''


def request(path, line, timeout=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall((line + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)


def timed(fn):
    t0 = time.monotonic()
    fn()
    return (time.monotonic() - t0) * 1000


def metric(text, name):
    m = re.search("^" + re.escape(name) + r" ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


def one_run(args, flooded):
    d = tempfile.mkdtemp(prefix="corenoise-flood-")
    os.chmod(d, 0o777)
    log = open(os.path.join(d, "log"), "w")
    daemon = subprocess.Popen(
        ["setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups",
         os.path.join(args.build_dir, "daemon/corenoised"), "--config", "/dev/null",
         "--listen", "127.0.0.1:0", "--socket", d + "/ctl.sock", "--state-dir", d,
         "--interval", "2", "--interval-spread", "0", "--concurrent-every", "0",
         "--busy-policy", "probe", "--samples", "3", "--reps", "8",
         "--detour-window", "0.01", "--stream-bytes", "8388608"],
        stdout=log, stderr=log)
    port = None
    for _ in range(100):
        time.sleep(0.1)
        m = re.search(r"exporter listening on [0-9.]+:(\d+)", open(log.name).read())
        if m and os.path.exists(d + "/user.sock"):
            port = int(m.group(1))
            break
    if port is None:
        daemon.kill()
        sys.exit("corenoised did not start: " + open(log.name).read())
    url = "http://127.0.0.1:%d/metrics" % port
    flood = None
    if flooded:
        flood = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
             sys.executable, "-c", FLOOD, d + "/user.sock", str(args.rate), str(args.hold)],
            stdout=subprocess.PIPE, text=True)
        time.sleep(1)
    start_rounds = metric(urllib.request.urlopen(url).read().decode(),
                          'corenoise_rounds_total{mode="isolated"}') or 0
    scrape, status, pause = [], [], []
    ctl = d + "/ctl.sock"
    t_end = time.monotonic() + args.seconds
    while time.monotonic() < t_end:
        scrape.append(timed(lambda: urllib.request.urlopen(url, timeout=10).read()))
        status.append(timed(lambda: request(ctl, '{"command":"status"}')))
        time.sleep(1)
    text = urllib.request.urlopen(url).read().decode()
    rounds = (metric(text, 'corenoise_rounds_total{mode="isolated"}') or 0) - start_rounds
    for _ in range(5):
        pause.append(timed(lambda: (request(ctl, '{"command":"pause"}'),
                                    request(ctl, '{"command":"resume"}'))))
        time.sleep(0.2)
    text = urllib.request.urlopen(url).read().decode()
    refused = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^corenoise_job_reports_refused_total\{reason="(\w+)"\} ([0-9.e+]+)$', text, re.M)}
    hwm = 0
    with open("/proc/%d/status" % daemon.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    sent = 0
    if flood:
        flood.kill()
        out = flood.stdout.read().split()
        sent = int(out[-1]) if out else 0
    daemon.terminate()
    daemon.wait(timeout=20)
    subprocess.run(["rm", "-rf", d])

    def p99(xs):
        return sorted(xs)[min(len(xs) - 1, int(0.99 * len(xs)))]

    return {"flooded": flooded, "scrape_ms": statistics.median(scrape),
            "scrape_p99_ms": p99(scrape), "status_ms": statistics.median(status),
            "status_p99_ms": p99(status), "pause_resume_ms": statistics.median(pause),
            "pause_resume_p99_ms": p99(pause), "rounds": rounds, "rss_mib": hwm,
            "lines_sent": sent, "refused": {k: v for k, v in refused.items() if v}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=float, default=1000, help="job lines a second")
    parser.add_argument("--hold", type=int, default=500, help="trickling connections")
    parser.add_argument("--raw", help="write every run's figures here (JSON)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: the daemon runs as 'daemon', the flood as 'nobody'")
    runs = []
    for i in range(args.runs):
        for flooded in (False, True):
            r = one_run(args, flooded)
            runs.append(r)
            print(json.dumps(r), flush=True)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(runs, f, indent=1)
    keys = ["scrape_ms", "scrape_p99_ms", "status_ms", "status_p99_ms", "pause_resume_ms",
            "pause_resume_p99_ms", "rounds", "rss_mib"]
    print("\n| figure (median of %d runs) | quiet | flooded |" % args.runs)
    print("|---|---|---|")
    for k in keys:
        q = statistics.median(r[k] for r in runs if not r["flooded"])
        f = statistics.median(r[k] for r in runs if r["flooded"])
        print("| %s | %.2f | %.2f |" % (k, q, f))
    sent = statistics.median(r["lines_sent"] for r in runs if r["flooded"])
    print("\nflood: %.0f job lines sent a run (median), %d connections held" % (sent, args.hold))
    for r in runs:
        if r["flooded"]:
            print("  refused:", r["refused"])


if __name__ == "__main__":
    main()
