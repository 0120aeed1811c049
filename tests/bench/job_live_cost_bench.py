#!/usr/bin/python3
"""The live reduction's cost side by side (docs/job.md, "Live"): bsp_step_app
(2 ranks, mpiexec.mpich -bind-to core) under `corenoise job` with
--live-interval 0 (no live reduction) and with --live-interval S, in
interleaved pairs so that the host's drift hits both alike. Per run: the
mean step (the loop's wall time over its steps: an epoch's cost lands on a
few steps, which a median would not see), the median step, and rank 0's
account of the library's own time (overhead_seconds over elapsed: its
sampling and, with live on, its epochs). Prints the medians over the pairs
and the per-pair ratios. Figures only: never fails on a timing.

    tests/bench/job_live_cost_bench.py --build-dir build [--pairs 5]
        [--interval 30] [--steps 3000] [--step-products 256]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--interval", type=float, default=30)
    # 256 products of 128x128: ~20 ms a step here; 3000 steps, ~60 s a run.
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--step-products", type=int, default=256)
    args = parser.parse_args()
    corenoise = os.path.join(args.build_dir, "collector", "corenoise")
    app = os.path.join(args.build_dir, "tests", "scenario", "bsp_step_app")
    launcher = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
    with tempfile.TemporaryDirectory() as tmp:
        app_json = os.path.join(tmp, "app.json")
        job_json = os.path.join(tmp, "job.json")
        live_json = os.path.join(tmp, "live.json")
        app_args = [app, "--steps", str(args.steps), "--step-products", str(args.step_products),
                    "--json", app_json, "--per-step"]

        def run(interval):
            cmd = launcher + [corenoise, "job", "--no-daemon", "--no-spill", "--quiet", "--json",
                              job_json, "--live-interval", str(interval)]
            if interval > 0:
                cmd += ["--live", live_json]
            subprocess.run(cmd + ["--"] + app_args, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            doc = json.load(open(app_json))
            rank0 = doc["per_rank"][0]
            steps = [c + b for c, b in zip(rank0["compute_seconds"], rank0["barrier_seconds"])]
            job = json.load(open(job_json))
            own = job["ranks"][0]["counters"]["overhead_seconds"] / job["elapsed_seconds"]
            epochs = json.load(open(live_json))["live"] if interval > 0 else None
            return doc["wall_seconds"] / len(steps), statistics.median(steps), own, epochs

        off, on = [], []
        for _ in range(args.pairs):
            off.append(run(0))
            on.append(run(args.interval))
        print(f"{args.pairs} pairs of {args.steps} steps, live every {args.interval:g} s "
              f"against none:")
        for index, name in ((0, "mean step"), (1, "median step")):
            ratios = [b[index] / a[index] for a, b in zip(off, on)]
            print(f"  {name}: off {statistics.median(x[index] for x in off) * 1e3:.4f} ms, on "
                  f"{statistics.median(x[index] for x in on) * 1e3:.4f} ms; per-pair ratio median "
                  f"{statistics.median(ratios):.4f} (min {min(ratios):.4f}, max {max(ratios):.4f})")
        print(f"  rank 0's own time, by its clock: off median "
              f"{statistics.median(x[2] for x in off) * 100:.3f} %, on "
              f"{statistics.median(x[2] for x in on) * 100:.3f} % of the job")


if __name__ == "__main__":
    main()
