#!/usr/bin/python3
"""`corenoise job`'s overhead on codes that synchronise by exchanges, side
by side, in interleaved pairs (without, with) so that the host's drift hits
both alike:

  halo_app (tests/job/halo_app.cpp), 2 ranks bound, ~3 ms steps, a
  nonblocking 2-D halo exchange each step: a run's figure is rank 0's
  median step (work and exchange), which a stray interruption of this
  shared VM does not move;
  Debian's ScaLAPACK test programs xdlu and xdqr (Fortran over BLACS:
  thousands of small sends, receives and broadcasts) on
  tests/job/scalapack's inputs: a run's figure is its wall time.

Prints per case the medians without and with the library, the ratio of
the medians, the median and range of the per-pair ratios, and for the
halo the library's own account of its sampling (overhead_seconds over
elapsed, median over ranks and runs). Figures only: never fails on a
timing (docs/job.md quotes them). Run it alone on a quiet machine.

    tests/bench/job_exchange_overhead_bench.py --build-dir build [--pairs 11]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALAPACK = "/usr/lib/x86_64-linux-gnu/scalapack"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(cmd, cwd=None):
    start = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=cwd, env=ENV).stdout
    return out, time.monotonic() - start


def summary(name, plain, measured, extra=""):
    ratios = [m / p for p, m in zip(plain, measured)]
    print("%-24s without %.6f s  with %.6f s  ratio of medians %.4f  per-pair ratio median %.4f (%.4f-%.4f)%s" % (
        name, statistics.median(plain), statistics.median(measured),
        statistics.median(measured) / statistics.median(plain), statistics.median(ratios), min(ratios),
        max(ratios), extra))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--pairs", type=int, default=11)
    args = parser.parse_args()
    corenoise = os.path.join(args.build_dir, "collector", "corenoise")
    with tempfile.TemporaryDirectory() as tmp:
        job_json = os.path.join(tmp, "job.json")
        job = [corenoise, "job", "--no-daemon", "--no-spill", "--quiet", "--json", job_json, "--"]

        launcher = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
        halo = [os.path.join(args.build_dir, "tests", "job", "halo_app_mpich"), "--steps", "600", "--step-ms", "3",
                "--exchange", "nonblocking", "--dims", "2", "--median-step"]
        plain, measured, accounted = [], [], []
        for _ in range(args.pairs):
            out, _ = run(launcher + halo)
            plain.append(float(re.search(r"median step ([0-9.]+)", out).group(1)))
            out, _ = run(launcher + job + halo)
            measured.append(float(re.search(r"median step ([0-9.]+)", out).group(1)))
            report = json.load(open(job_json))
            for r in report["ranks"]:
                accounted.append(r["counters"]["overhead_seconds"] / report["elapsed_seconds"])
        summary("halo_app 3 ms step", plain, measured,
                "  library's own account %.4f %% of elapsed" % (100 * statistics.median(accounted)))

        inputs = os.path.join(ROOT, "tests", "job", "scalapack")
        for family, launch in (("mpich", ["mpiexec.mpich", "-n", "2"]), ("openmpi", ["mpirun.openmpi", "-n", "2"])):
            for program in ("xdlu", "xdqr"):
                binary = os.path.join(SCALAPACK, family + "-tests", program)
                plain, measured = [], []
                for _ in range(args.pairs):
                    plain.append(run(launch + [binary], cwd=inputs)[1])
                    measured.append(run(launch + [os.path.abspath(corenoise)] + job[1:] + [binary], cwd=inputs)[1])
                summary("%s %s wall" % (program, family), plain, measured)


if __name__ == "__main__":
    main()
