// bsp_step_app: the story's application (DESIGN.md, "The problem it solves")
// as a small MPI program. Every rank runs the same fixed-work step — K dense
// n×n f64 products, corenoise's own matmul probe kernel, so that one step is
// exactly the probe's work type — then MPI_Barrier and a small MPI_Allreduce,
// and the job reports across ranks the min and max of the compute, barrier
// and allreduce times, as the story's script does.
//
// It stands in for a USER's application, so unlike the product (where only
// the MPI plugins of collector/mpi/ include <mpi.h>) it calls MPI directly.
//
//   mpiexec.mpich -n 2 -bind-to core bsp_step_app [--steps N] [--step-products K]
//       [--matmul-size n] [--warmup-steps W] [--json FILE [--per-step]]
//       [--late-rank R --late-steps A:B [--late-factor F]]
//
// Unlike the story's one-shot script it repeats the step, because one step
// is one draw of the noise: per rank it keeps every step's times and reports
// the MEDIAN compute time of a step (the rank's typical speed, robust to a
// stray step) and the MEAN barrier and allreduce time per step (waits add
// up: mean × steps is the time the rank lost). The job's figure is the mean
// barrier wait per step over all ranks and steps — what
// `corenoise sweep`'s `prediction.wait_seconds` predicts (docs/scenario.md).
//
// Exit status: 0 done, 1 bad arguments or an error.
#include <mpi.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/matmul.h"

namespace {

using corenoise::Dtype;
using corenoise::MatmulKernel;
using nlohmann::json;

struct Options {
  int steps = 200;
  // 1024 products of 128×128 f64 take ~40 ms on a 3.7 GHz AVX-512 core:
  // long enough that a step spans several periods of millisecond-scale noise
  // (a 1 ms-in-10 ms thread takes its average share of every step), short
  // enough that 200 steps take ~10 s.
  int step_products = 1024;
  int matmul_size = 128;
  int warmup_steps = 5;
  std::string json_path;
  bool per_step = false;  // every step's times in the JSON, per rank
  // For `corenoise job`'s tests of a job that loses a rank: this rank
  // kills itself (SIGKILL, as the OOM killer would) at the start of step
  // kill_at_step; or skips MPI_Finalize and exits 0.
  int kill_rank = -1;
  int kill_at_step = 0;
  int skip_finalize_rank = -1;
  // A rank with a known extra over a known stretch of steps (chronic or
  // in bursts, lateness_pattern.h): late_rank runs the step's products
  // late_factor times in steps [late_from, late_to).
  int late_rank = -1;
  int late_from = 0, late_to = 0;
  int late_factor = 2;
};

[[noreturn]] void usage(int rank, const std::string& why) {
  if (rank == 0) {
    std::fprintf(stderr,
                 "bsp_step_app: %s\nusage: bsp_step_app [--steps N] [--step-products K] "
                 "[--matmul-size n] [--warmup-steps W] [--json FILE [--per-step]]\n"
                 "       [--kill-rank R --kill-at-step S] [--skip-finalize-rank R]\n"
                 "       [--late-rank R --late-steps A:B [--late-factor F]]\n",
                 why.c_str());
  }
  MPI_Finalize();
  std::exit(1);
}

Options parse(int argc, char** argv, int rank) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--per-step") {
      o.per_step = true;
      continue;
    }
    if (i + 1 >= argc) usage(rank, "missing value for " + arg);
    const std::string value = argv[++i];
    auto positive = [&](int minimum) {
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || v < minimum || v > 1000000) {
        usage(rank, arg + " " + value + ": expected an integer >= " + std::to_string(minimum));
      }
      return static_cast<int>(v);
    };
    if (arg == "--steps") {
      o.steps = positive(1);
    } else if (arg == "--step-products") {
      o.step_products = positive(1);
    } else if (arg == "--matmul-size") {
      o.matmul_size = positive(1);
    } else if (arg == "--warmup-steps") {
      o.warmup_steps = positive(0);
    } else if (arg == "--json") {
      o.json_path = value;
    } else if (arg == "--kill-rank") {
      o.kill_rank = positive(0);
    } else if (arg == "--kill-at-step") {
      o.kill_at_step = positive(0);
    } else if (arg == "--skip-finalize-rank") {
      o.skip_finalize_rank = positive(0);
    } else if (arg == "--late-rank") {
      o.late_rank = positive(0);
    } else if (arg == "--late-steps") {
      if (std::sscanf(value.c_str(), "%d:%d", &o.late_from, &o.late_to) != 2 || o.late_from < 0 ||
          o.late_to < o.late_from) {
        usage(rank, arg + " " + value + ": expected A:B, 0 <= A <= B (steps A to B-1)");
      }
    } else if (arg == "--late-factor") {
      o.late_factor = positive(1);
    } else {
      usage(rank, "unknown option " + arg);
    }
  }
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// One rank's summary, sent to rank 0 as plain doubles.
enum Field {
  kCpuStart,
  kCpuEnd,
  kComputeMedian,
  kComputeMean,
  kComputeMin,
  kComputeMax,
  kBarrierMean,
  kBarrierMedian,
  kBarrierMax,
  kAllreduceMean,
  kAllreduceMax,
  kFields
};

std::vector<double> summarize(int cpu_start, int cpu_end, const std::vector<double>& compute,
                              const std::vector<double>& barrier,
                              const std::vector<double>& allreduce) {
  std::vector<double> s(kFields);
  s[kCpuStart] = cpu_start;
  s[kCpuEnd] = cpu_end;
  s[kComputeMedian] = median(compute);
  s[kComputeMean] = mean(compute);
  s[kComputeMin] = *std::min_element(compute.begin(), compute.end());
  s[kComputeMax] = *std::max_element(compute.begin(), compute.end());
  s[kBarrierMean] = mean(barrier);
  s[kBarrierMedian] = median(barrier);
  s[kBarrierMax] = *std::max_element(barrier.begin(), barrier.end());
  s[kAllreduceMean] = mean(allreduce);
  s[kAllreduceMax] = *std::max_element(allreduce.begin(), allreduce.end());
  return s;
}

// Min and max over ranks of one field, in ms, as the story prints them.
void print_min_max(const char* label, const std::vector<double>& all, int ranks, Field field) {
  double lo = 1e300, hi = -1e300;
  for (int r = 0; r < ranks; ++r) {
    lo = std::min(lo, all[r * kFields + field]);
    hi = std::max(hi, all[r * kFields + field]);
  }
  std::printf("%-28s min = %10.6f msec, max = %10.6f msec\n", label, lo * 1e3, hi * 1e3);
}

// Rank 0's report: the story's four lines, per-rank lines with their CPUs,
// the job's mean barrier wait, and the JSON document.
void report(const Options& o, const MatmulKernel& kernel, int ranks, const std::vector<double>& all,
            const std::vector<double>& all_compute, const std::vector<double>& all_barrier,
            double wall_seconds) {
  auto at = [&](const std::vector<double>& v, int r, int step) {
    return v[static_cast<std::size_t>(r) * o.steps + step];
  };
  // Per step: the barrier wait averaged over ranks, and the slowest rank's
  // compute minus the mean compute — the wait that the compute imbalance
  // alone explains (the barrier's own latency aside, they should agree).
  std::vector<double> step_wait(o.steps);
  double imbalance = 0;
  for (int step = 0; step < o.steps; ++step) {
    double slowest = 0, sum = 0, waited = 0;
    for (int r = 0; r < ranks; ++r) {
      slowest = std::max(slowest, at(all_compute, r, step));
      sum += at(all_compute, r, step);
      waited += at(all_barrier, r, step);
    }
    imbalance += slowest - sum / ranks;
    step_wait[step] = waited / ranks;
  }
  imbalance /= o.steps;
  // The mean is the time the job lost; the median over steps is a typical
  // step's wait, which rare long interruptions (a hypervisor or another
  // process taking a core for tens of ms) do not move.
  const double wait = mean(step_wait);
  const double typical_wait = median(step_wait);

  std::printf("bsp_step_app: %d ranks, %d steps of %d products of %dx%d f64 (%s), %.1f s\n", ranks,
              o.steps, o.step_products, o.matmul_size, o.matmul_size,
              std::string(corenoise::to_string(kernel.isa())).c_str(), wall_seconds);
  std::printf("per step; compute: each rank's median; barrier, allreduce: each rank's mean\n");
  print_min_max("Computation time:", all, ranks, kComputeMedian);
  print_min_max("MPI Barrier time:", all, ranks, kBarrierMean);
  print_min_max("MPI Allreduce time:", all, ranks, kAllreduceMean);
  for (int r = 0; r < ranks; ++r) {
    const double* s = &all[r * kFields];
    std::printf(
        "  rank %d cpu %d: compute median %.3f ms (min %.3f, max %.3f), barrier mean %.3f ms "
        "(max %.3f), allreduce mean %.3f ms\n",
        r, static_cast<int>(s[kCpuStart]), s[kComputeMedian] * 1e3, s[kComputeMin] * 1e3,
        s[kComputeMax] * 1e3, s[kBarrierMean] * 1e3, s[kBarrierMax] * 1e3, s[kAllreduceMean] * 1e3);
  }
  std::printf(
      "job: barrier wait per step, averaged over ranks: mean %.3f ms, median step %.3f ms "
      "(compute imbalance explains %.3f ms)\n",
      wait * 1e3, typical_wait * 1e3, imbalance * 1e3);

  if (o.json_path.empty()) return;
  json doc = {{"ranks", ranks},
              {"steps", o.steps},
              {"step_products", o.step_products},
              {"matmul_size", o.matmul_size},
              {"dtype", "f64"},
              {"isa", std::string(corenoise::to_string(kernel.isa()))},
              {"wall_seconds", wall_seconds},
              {"mean_barrier_wait_seconds", wait},
              {"median_step_barrier_wait_seconds", typical_wait},
              {"compute_imbalance_seconds", imbalance},
              {"per_rank", json::array()}};
  for (int r = 0; r < ranks; ++r) {
    const double* s = &all[r * kFields];
    doc["per_rank"].push_back({{"rank", r},
                               {"cpu", static_cast<int>(s[kCpuStart])},
                               {"cpu_end", static_cast<int>(s[kCpuEnd])},
                               {"compute_median_seconds", s[kComputeMedian]},
                               {"compute_mean_seconds", s[kComputeMean]},
                               {"compute_min_seconds", s[kComputeMin]},
                               {"compute_max_seconds", s[kComputeMax]},
                               {"barrier_mean_seconds", s[kBarrierMean]},
                               {"barrier_median_seconds", s[kBarrierMedian]},
                               {"barrier_max_seconds", s[kBarrierMax]},
                               {"allreduce_mean_seconds", s[kAllreduceMean]},
                               {"allreduce_max_seconds", s[kAllreduceMax]}});
    if (o.per_step) {
      std::vector<double> c(o.steps), b(o.steps);
      for (int step = 0; step < o.steps; ++step) {
        c[step] = at(all_compute, r, step);
        b[step] = at(all_barrier, r, step);
      }
      doc["per_rank"].back()["compute_seconds"] = c;
      doc["per_rank"].back()["barrier_seconds"] = b;
    }
  }
  std::ofstream out(o.json_path);
  out << doc.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + o.json_path);
}

int run(int argc, char** argv) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv, rank);
  // The launcher's binding (-bind-to core) decides the CPU; the kernel's
  // buffers are first-touched here, after it.
  const int cpu_start = sched_getcpu();
  MatmulKernel kernel(o.matmul_size, Dtype::f64, o.step_products, corenoise::best_isa());
  // The allreduce's small payload, as the story reduces its result.
  std::vector<double> payload(8), total(8);

  for (int i = 0; i < o.warmup_steps; ++i) {
    kernel.run();
    MPI_Barrier(MPI_COMM_WORLD);
    payload[0] = kernel.checksum();
    MPI_Allreduce(payload.data(), total.data(), 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

  std::vector<double> compute(o.steps), barrier(o.steps), allreduce(o.steps);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto job_start = std::chrono::steady_clock::now();
  for (int step = 0; step < o.steps; ++step) {
    if (rank == o.kill_rank && step == o.kill_at_step) ::raise(SIGKILL);
    const auto t0 = std::chrono::steady_clock::now();
    const bool late = rank == o.late_rank && step >= o.late_from && step < o.late_to;
    for (int k = 0; k < (late ? o.late_factor : 1); ++k) kernel.run();
    const auto t1 = std::chrono::steady_clock::now();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t2 = std::chrono::steady_clock::now();
    payload[0] = kernel.checksum();
    MPI_Allreduce(payload.data(), total.data(), 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const auto t3 = std::chrono::steady_clock::now();
    compute[step] = std::chrono::duration<double>(t1 - t0).count();
    barrier[step] = std::chrono::duration<double>(t2 - t1).count();
    allreduce[step] = std::chrono::duration<double>(t3 - t2).count();
  }
  const double wall_seconds = seconds_since(job_start);
  // A rank that migrated would make the rank → core mapping meaningless;
  // the report shows both ends so that a reader can tell.
  const int cpu_end = sched_getcpu();

  const std::vector<double> mine = summarize(cpu_start, cpu_end, compute, barrier, allreduce);
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(ranks) * kFields : 0);
  MPI_Gather(mine.data(), kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // Every step's compute and barrier times, for the per-step figures
  // (16 bytes × steps per rank: 12 MB at the root for the story's 3,840
  // ranks × 200 steps).
  std::vector<double> all_compute(rank == 0 ? static_cast<std::size_t>(ranks) * o.steps : 0);
  std::vector<double> all_barrier(all_compute.size());
  MPI_Gather(compute.data(), o.steps, MPI_DOUBLE, all_compute.data(), o.steps, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  MPI_Gather(barrier.data(), o.steps, MPI_DOUBLE, all_barrier.data(), o.steps, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (rank == 0) report(o, kernel, ranks, all, all_compute, all_barrier, wall_seconds);
  if (rank == o.skip_finalize_rank) std::_Exit(0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bsp_step_app: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
