#!/usr/bin/python3
"""`corenoise job`'s per-call cost on the worst case for a wrapper: a
message-rate-bound program (tests/bench/message_rate_app.cpp: back-to-back
MPI_Barrier, MPI_Allreduce of one double, and a ring exchange of one
double polled with MPI_Testany), 2 ranks bound to cores, under each MPI
family, in interleaved triples, each in a rotated order (without; under an interposer that only
passes the calls on, tests/bench/empty_interposer.cpp, the floor of any
wrapper; with the library) so that the host's drift hits all alike.

Prints per family and phase the medians without, under the empty
interposer and with the library (ns per call), what the library adds to
plain and to the empty interposer, the ratio of the medians (with /
without), and the median and range of the per-run ratios. Figures only:
never fails on a timing (docs/job.md quotes them). Run it alone on a
quiet machine.

    tests/bench/job_call_rate_bench.py --build-dir build [--pairs 6] [--calls 200000]

--pairs: the interleaved runs of each of the three (default 6: each
order of the rotation twice).
"""
import argparse
import os
import statistics
import subprocess

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
LAUNCHERS = {
    "mpich": ["mpiexec.mpich", "-n", "2", "-bind-to", "core"],
    "openmpi": ["mpirun.openmpi", "-n", "2", "--bind-to", "core"],
}
PHASES = ("barrier_ns", "allreduce_ns", "polled_exchange_ns")


def preload(family, library):
    """The launcher's way to put `library` in every rank's LD_PRELOAD."""
    return ["-genv", "LD_PRELOAD", library] if family == "mpich" else ["-x", "LD_PRELOAD=" + library]


def figures(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=ENV).stdout
    values = {}
    for line in out.splitlines():
        name, _, value = line.partition(" ")
        if name in PHASES or name == "polls_per_exchange":
            values[name] = float(value)
    missing = [p for p in PHASES if p not in values]
    if missing:
        raise SystemExit("%s printed no %s:\n%s" % (cmd[-1], ", ".join(missing), out))
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200000)
    args = parser.parse_args()
    corenoise = os.path.abspath(os.path.join(args.build_dir, "collector", "corenoise"))
    job = [corenoise, "job", "--no-daemon", "--no-spill", "--quiet", "--"]
    print("%-8s %-20s %10s %11s %10s %9s %9s %8s %s" % (
        "family", "phase", "without", "interposer", "with", "added", "over int.", "ratio",
        "per-run ratio median (range)"))
    for family, launcher in LAUNCHERS.items():
        app = [os.path.join(args.build_dir, "tests", "bench", "message_rate_app_" + family), "--calls",
               str(args.calls)]
        empty = os.path.abspath(os.path.join(args.build_dir, "tests", "bench",
                                             "libempty_interposer_%s.so" % family))
        plain, interposed, measured = [], [], []
        arms = [(plain, launcher + app), (interposed, launcher + preload(family, empty) + app),
                (measured, launcher + job + app)]
        for i in range(args.pairs):
            # Each triple in another order: whatever the runs' place does
            # (the host's drift, a warm cache), it does to each arm alike.
            for into, cmd in arms[i % 3:] + arms[:i % 3]:
                into.append(figures(cmd))
        for phase in PHASES:
            p = [f[phase] for f in plain]
            e = [f[phase] for f in interposed]
            m = [f[phase] for f in measured]
            ratios = [b / a for a, b in zip(p, m)]
            print("%-8s %-20s %7.1f ns %8.1f ns %7.1f ns %+6.1f ns %+6.1f ns %8.4f %.4f (%.4f-%.4f)" % (
                family, phase, statistics.median(p), statistics.median(e), statistics.median(m),
                statistics.median(m) - statistics.median(p), statistics.median(m) - statistics.median(e),
                statistics.median(m) / statistics.median(p),
                statistics.median(ratios), min(ratios), max(ratios)))
        print("%-8s %-20s %10.1f %11.1f %10.1f" % (
            family, "polls per exchange", statistics.median(f["polls_per_exchange"] for f in plain),
            statistics.median(f["polls_per_exchange"] for f in interposed),
            statistics.median(f["polls_per_exchange"] for f in measured)))


if __name__ == "__main__":
    main()
