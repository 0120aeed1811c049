#!/usr/bin/python3
"""The story's script (../shared/context/jax-mpi-load-imbalance.txt) with numpy
in place of JAX: every rank multiplies a batch of matrices n_iter times per
step, then MPI Barrier and Allreduce, as the user's program does, and at the
end the user's min/max reductions of the timings with mpi4py's lowercase
object allreduce.

It repeats the step (--steps), because one step is one draw of the noise,
and can make one rank differ, for the ground-truth tests of `corenoise job`
(tests/job/job_test.cpp):
  --own-threads R:K   rank R runs K threads of its own computing numpy
                      products during the steps, on its (bound) core
  --larger R:F        rank R's matrices are F times larger (more work)
  --first-step R:K    rank R computes K times over in the first step only (a
                      warm-up skew, as a JIT's compile on one rank)
The third case, another process taking a share of a rank's core, is made
from outside (corenoise inject --normal on that core).
"""
import argparse
import threading
import time

import numpy as np
from mpi4py import MPI


def rank_factor(spec, rank, default):
    if not spec:
        return default
    who, value = spec.split(":")
    return type(default)(value) if int(who) == rank else default


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--own-threads", default="")
    parser.add_argument("--larger", default="")
    parser.add_argument("--first-step", default="")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    size = args.size
    factor = rank_factor(args.larger, rank, 1.0)
    size = int(round(size * factor ** (1.0 / 3.0)))  # F times the flops
    rng = np.random.default_rng(1234 + rank)
    a = rng.random((args.batch, size, size))
    b = rng.random((args.batch, size, size)) / size

    def compute(x):
        for _ in range(args.iterations):
            x = np.matmul(x, b)
        return x

    stop = threading.Event()
    helpers = []
    for _ in range(rank_factor(args.own_threads, rank, 0)):
        def spin():
            x = a.copy()
            while not stop.is_set():
                x = np.matmul(x, b)  # releases the GIL: a real second thread on the core
        helpers.append(threading.Thread(target=spin, daemon=True))
    comm.Barrier()
    for helper in helpers:
        helper.start()

    compute_time = barrier_time = allreduce_time = 0.0
    first_step_repeats = rank_factor(args.first_step, rank, 1)
    for step in range(args.steps):
        start = time.perf_counter()
        for _ in range(first_step_repeats if step == 0 else 1):
            result = compute(a)
        compute_time += time.perf_counter() - start
        start = time.perf_counter()
        comm.Barrier()
        barrier_time += time.perf_counter() - start
        local = np.ascontiguousarray(result[:, :8, :8])
        total = np.empty_like(local)
        start = time.perf_counter()
        comm.Allreduce(local, total, op=MPI.SUM)
        allreduce_time += time.perf_counter() - start
    stop.set()
    for helper in helpers:
        helper.join()

    timings = {}
    for name, value in (("compute", compute_time), ("barrier", barrier_time),
                        ("allreduce", allreduce_time)):
        timings[name] = (comm.allreduce(value, op=MPI.MIN), comm.allreduce(value, op=MPI.MAX))
    if rank == 0:
        for name, (low, high) in timings.items():
            print(f"{name:10s} min = {low * 1e3:10.3f} msec, max = {high * 1e3:10.3f} msec")


if __name__ == "__main__":
    main()
