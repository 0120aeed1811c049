#!/usr/bin/env python3
"""Verdicts side by side: the point rule of before against the rule of
docs/verdicts.md (confidence, confirmation, persistence), on this machine.

  clean-probe N      N clean `corenoise probe` rounds (every CPU)
  daemon N           N rounds of a real corenoised (`corenoise run`)
  inject R           R probe rounds under each injection of
                     2/5/10/20 % x 1/10/100 ms on CPU 1 (`corenoise inject`)

The old rule is recomputed from each round's own figures: throttled at a
clock ratio >= 1.05, noisy at >= 0.05 excess noise, contended at a stream
slowdown >= 1.25, slow at an expected slowdown >= 1.05 (the point, no
bound, no re-measurement). The figures are today's (the median of
per-sample figures), so the comparison isolates the decision rule.
Prints Markdown tables (docs/validation.md) and writes every round's JSON
under --out.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

UNHEALTHY = {"noisy", "throttled", "contended", "slow"}


def old_state(c, t):
    """The point rule of before on one CPU's figures (one mode)."""
    if c.get("state") == "skipped":
        return "skipped"
    if c.get("clock", {}).get("ratio", 0) >= t["throttled_clock_ratio"]:
        return "throttled"
    if c.get("excess_noise", 0) >= t["noisy_excess_noise"]:
        return "noisy"
    if c.get("stream", {}).get("slowdown", 0) >= t["contended_stream_ratio"]:
        return "contended"
    if c.get("expected_slowdown", 0) >= t["slow_ratio"]:
        return "slow"
    return "ok"


def probe(corenoise, extra=()):
    r = subprocess.run([corenoise, "probe", "--json", "-", *extra], capture_output=True, text=True)
    if r.returncode not in (0, 2):
        sys.exit("corenoise probe failed: " + r.stderr)
    return r.returncode, json.loads(r.stdout)


def judge_round(doc):
    """Per CPU: (old state, screened suspect?, final state)."""
    t = doc["settings"]["thresholds"]
    out = {}
    for c in doc["cpus"]:
        if c["state"] == "skipped":
            continue
        conf = c.get("confirmation")
        suspect = conf is not None or c["state"] in UNHEALTHY
        out[c["cpu"]] = (old_state(c, t), suspect, c["state"], conf)
    return out


def confirmation_cost(doc):
    measured = sum(r["duration_seconds"] for r in doc["rounds"])
    again = sum(r.get("confirmation", {}).get("duration_seconds", 0) for r in doc["rounds"])
    return measured, again


def clean_probe(args):
    old_cores = suspects = confirmed = 0
    old_rounds = new_rounds = 0
    core_rounds = 0
    costs = []
    states = {}
    for i in range(args.n):
        code, doc = probe(args.corenoise)
        with open(os.path.join(args.out, "clean-%04d.json" % i), "w") as f:
            json.dump(doc, f)
        judged = judge_round(doc)
        core_rounds += len(judged)
        old_bad = sum(1 for o, s, n, c in judged.values() if o in UNHEALTHY)
        old_cores += old_bad
        old_rounds += old_bad > 0
        suspects += sum(1 for o, s, n, c in judged.values() if s)
        final_bad = sum(1 for o, s, n, c in judged.values() if n in UNHEALTHY)
        confirmed += final_bad
        new_rounds += code == 2
        for o, s, n, c in judged.values():
            if n in UNHEALTHY:
                states[n] = states.get(n, 0) + 1
        measured, again = confirmation_cost(doc)
        if again > 0:
            costs.append(again / measured)
    costs.sort()
    print("## %d clean probe rounds, %d core-rounds\n" % (args.n, core_rounds))
    print("| rule | unhealthy core-rounds | rounds exiting 2 |")
    print("|---|---|---|")
    print("| point rule of before | %d (%.2f %%) | %d |" % (old_cores, 100 * old_cores / core_rounds,
                                                          old_rounds))
    print("| new screen (suspects) | %d (%.2f %%) | - |" % (suspects, 100 * suspects / core_rounds))
    print("| new, confirmed | %d | %d |" % (confirmed, new_rounds))
    print()
    print("confirmed states:", states or "none")
    if costs:
        print("confirmation cost in the %d rounds with suspects: median %.0f %% of the round, max %.0f %%"
              % (len(costs), 100 * costs[len(costs) // 2], 100 * costs[-1]))


def daemon(args):
    work = tempfile.mkdtemp(prefix="corenoise-vb-")
    sock = os.path.join(work, "ctl.sock")
    d = subprocess.Popen([args.corenoised, "--listen", "127.0.0.1:0", "--socket", sock,
                          "--state-dir", work, "--interval", "86400", "--busy-policy", "probe"],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        round_bad = persistent_bad = old_bad = 0
        core_rounds = 0
        worst_streak = 0
        for i in range(args.n):
            r = subprocess.run([args.corenoise, "run", "--socket", sock, "--json", "--timeout", "60"],
                               capture_output=True, text=True)
            if r.returncode not in (0, 2):
                sys.exit("corenoise run failed: " + r.stderr)
            reply = json.loads(r.stdout)
            states = reply.get("states", {})
            core_rounds += sum(v for k, v in states.items() if k != "skipped")
            persistent_bad += sum(states.get(s, 0) for s in UNHEALTHY)
            for entry in reply.get("unhealthy", []) + reply.get("transient", []):
                if entry.get("round_state") in UNHEALTHY:
                    round_bad += 1
                worst_streak = max(worst_streak, entry.get("unhealthy_rounds", 0))
        print("## %d daemon rounds (persist-bad 2 of persist-rounds 3), %d core-rounds\n"
              % (args.n, core_rounds))
        print("| verdict | unhealthy core-rounds |")
        print("|---|---|")
        print("| the round's own (corenoise_round_core_state) | %d (%.2f %%) |"
              % (round_bad, 100 * round_bad / max(core_rounds, 1)))
        print("| persistent (corenoise_core_state, status, health check) | %d |" % persistent_bad)
        print("\nmost unhealthy rounds of any core's last 3: %d" % worst_streak)
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(10)


def inject(args):
    rows = []
    for duty in (0.02, 0.05, 0.10, 0.20):
        for period in (0.001, 0.01, 0.1):
            inj = subprocess.Popen([args.corenoise, "inject", "--cpus", "1", "--duty", str(duty),
                                    "--period", str(period), "--seconds", "3600"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            inj.stdout.readline()  # ready:
            old_found = new_suspect = new_found = 0
            first_old = first_new = None
            excess = []
            try:
                for i in range(args.n):
                    code, doc = probe(args.corenoise, ["--cpus", "0,1"])
                    j = judge_round(doc)
                    o, s, n, c = j[1]
                    cpu1 = [x for x in doc["cpus"] if x["cpu"] == 1][0]
                    excess.append(cpu1.get("excess_noise", 0))
                    if o == "noisy":
                        old_found += 1
                        first_old = i + 1 if first_old is None else first_old
                    if s:
                        new_suspect += 1
                    if n == "noisy":
                        new_found += 1
                        first_new = i + 1 if first_new is None else first_new
            finally:
                inj.send_signal(signal.SIGTERM)
                inj.wait(10)
            excess.sort()
            rows.append((duty, period, excess[len(excess) // 2], old_found, first_old, new_suspect,
                         new_found, first_new))
    print("## Injected noise on CPU 1, %d rounds each\n" % args.n)
    print("| duty | period | median excess | old: noisy | old: first | new: suspect | "
          "new: confirmed noisy | new: first |")
    print("|---|---|---|---|---|---|---|---|")
    for d, p, e, of, fo, ns, nf, fn in rows:
        print("| %g %% | %g ms | %.1f pts | %d | %s | %d | %d | %s |"
              % (d * 100, p * 1000, e * 100, of, fo or "-", ns, nf, fn or "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=["clean-probe", "daemon", "inject"])
    ap.add_argument("n", type=int)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--out", default=None, help="where to keep every round's JSON")
    args = ap.parse_args()
    args.corenoise = os.path.join(args.build_dir, "collector", "corenoise")
    args.corenoised = os.path.join(args.build_dir, "daemon", "corenoised")
    args.out = args.out or tempfile.mkdtemp(prefix="corenoise-vb-")
    os.makedirs(args.out, exist_ok=True)
    {"clean-probe": clean_probe, "daemon": daemon, "inject": inject}[args.what](args)


if __name__ == "__main__":
    main()
