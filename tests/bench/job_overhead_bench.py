#!/usr/bin/python3
"""`corenoise job`'s overhead side by side: bsp_step_app (2 ranks,
mpiexec.mpich -bind-to core) with and without the in-job library, at ~1 ms
and ~30 ms steps, in interleaved pairs so that the host's drift hits both
alike. A run's figure is its median step (compute + barrier of rank 0, over
every step: the median is what a stray interruption of this shared VM does
not move, where the loop's wall time moves by several per cent). Prints,
per step length, the medians without and with the library, the ratio of
their medians, the median and spread of the per-pair ratios, the loops'
wall times, and the library's own account of its sampling
(overhead_seconds over elapsed). Figures only: never fails on a timing
(docs/job.md quotes them).

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
    # 128x128 f64 products: ~80 us each here (measured); 12 per ~1 ms step,
    # 360 per ~30 ms step. Steps chosen for ~2-3 s per run.
    cases = [("1 ms", 12, 2000), ("30 ms", 360, 80)]
    launcher = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
    with tempfile.TemporaryDirectory() as tmp:
        app_json = os.path.join(tmp, "app.json")
        job_json = os.path.join(tmp, "job.json")
        for name, products, steps in cases:
            plain, measured, ratios, accounted, walls = [], [], [], [], ([], [])
            app_args = [app, "--steps", str(steps), "--step-products", str(products), "--json", app_json,
                        "--per-step"]

            def median_step():
                doc = json.load(open(app_json))
                rank0 = doc["per_rank"][0]
                return statistics.median(c + b for c, b in zip(rank0["compute_seconds"], rank0["barrier_seconds"])), doc["wall_seconds"]

            for _ in range(args.pairs):
                run(launcher + app_args)
                without, wall = median_step()
                walls[0].append(wall)
                run(launcher + [corenoise, "job", "--no-daemon", "--no-spill", "--quiet", "--json", job_json,
                                "--"] + app_args)
                with_lib, wall = median_step()
                walls[1].append(wall)
                job = json.load(open(job_json))
                accounted.append(max(r["counters"]["overhead_seconds"] / job["elapsed_seconds"]
                                     for r in job["ranks"]))
                plain.append(without)
                measured.append(with_lib)
                ratios.append(with_lib / without)
            q = statistics.quantiles(ratios, n=4)
            print(f"step {name}, {args.pairs} pairs of {steps} steps:")
            print(f"  median step without {statistics.median(plain) * 1e3:.4f} ms, with "
                  f"{statistics.median(measured) * 1e3:.4f} ms: ratio of medians "
                  f"{statistics.median(measured) / statistics.median(plain):.4f}")
            print(f"  per-pair ratio: median {statistics.median(ratios):.4f}, quartiles {q[0]:.4f}..{q[2]:.4f}")
            print(f"  loop wall time: median without {statistics.median(walls[0]):.3f} s, with "
                  f"{statistics.median(walls[1]):.3f} s")
            print(f"  the library's sampling, by its own clock: median {statistics.median(accounted) * 100:.3f} % "
                  f"of the job (worst rank)")


if __name__ == "__main__":
    main()
