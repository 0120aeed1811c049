#!/usr/bin/python3
"""`corenoise job`'s overhead side by side: bsp_step_app (2 ranks,
mpiexec.mpich -bind-to core) with and without the in-job library, at ~1 ms
and ~30 ms steps, in interleaved pairs so that the host's drift hits both
alike. Prints, per step length, the median wall time of the steps loop
without and with the library, the ratio of the medians and the median and
spread of the per-pair ratios, and the library's own account of its
sampling (overhead_seconds over elapsed). Figures only: never fails on a
timing (docs/job.md quotes them).

    tests/bench/job_overhead_bench.py --build-dir build [--pairs 15]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    corenoise = os.path.join(args.build_dir, "collector", "corenoise")
    app = os.path.join(args.build_dir, "tests", "scenario", "bsp_step_app")
    # 128x128 f64 products: ~40 us each with AVX-512 here; 25 per ~1 ms step,
    # 750 per ~30 ms step. Steps chosen for ~2-3 s per run.
    cases = [("1 ms", 25, 2000), ("30 ms", 750, 80)]
    launcher = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
    with tempfile.TemporaryDirectory() as tmp:
        app_json = os.path.join(tmp, "app.json")
        job_json = os.path.join(tmp, "job.json")
        for name, products, steps in cases:
            plain, measured, ratios, accounted = [], [], [], []
            app_args = [app, "--steps", str(steps), "--step-products", str(products), "--json", app_json]
            for _ in range(args.pairs):
                run(launcher + app_args)
                without = json.load(open(app_json))["wall_seconds"]
                run(launcher + [corenoise, "job", "--no-daemon", "--no-spill", "--quiet", "--json", job_json,
                                "--"] + app_args)
                with_lib = json.load(open(app_json))["wall_seconds"]
                job = json.load(open(job_json))
                accounted.append(max(r["counters"]["overhead_seconds"] / job["elapsed_seconds"]
                                     for r in job["ranks"]))
                plain.append(without)
                measured.append(with_lib)
                ratios.append(with_lib / without)
            q = statistics.quantiles(ratios, n=4)
            step = statistics.median(plain) / steps
            print(f"step {name} (measured {step * 1e3:.2f} ms), {args.pairs} pairs of {steps} steps:")
            print(f"  wall without {statistics.median(plain):.4f} s, with {statistics.median(measured):.4f} s: "
                  f"ratio of medians {statistics.median(measured) / statistics.median(plain):.4f}")
            print(f"  per-pair ratio: median {statistics.median(ratios):.4f}, quartiles {q[0]:.4f}..{q[2]:.4f}")
            print(f"  the library's sampling, by its own clock: median {statistics.median(accounted) * 100:.3f} % "
                  f"of the job (worst rank)")


if __name__ == "__main__":
    main()
