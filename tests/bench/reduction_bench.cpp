// What the cross-node reduction costs per leader: every rank plays the
// leader of a synthetic 128-core node (both modes' figures, a few unhealthy
// cores) and calls reduce_reports() as `corenoise collect` does, REPS times.
// Rank 0 prints the median reduction time (slowest leader of each
// repetition) and the payload bytes each leader contributed
// (MpiEnvironment::bytes_sent() delta), min and max over the leaders.
//
// Run with one fake node per rank so that every rank is a leader:
//   mpiexec.mpich -n N -genv MPIR_CVAR_NUM_CLIQUES N collector/reduction_bench [REPS]
// A benchmark: it never fails on a timing. See docs/performance.md.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "collector/cluster/cluster_reduction.h"
#include "collector/mpi/mpi_library.h"
#include "probe/report.h"
#include "probe/topology.h"

namespace corenoise {
namespace {

// Both modes of a 2 × 64-core node from synthetic samples with a little
// spread; cores 5 and 77 are slow (matmul 1.4×), core 100 noisy.
NodeReport synthetic_node(int node) {
  NodeReport report;
  report.version = CORENOISE_VERSION;
  report.hostname = "node" + std::to_string(node);
  report.topology_source = "synthetic:package:2 core:64 pu:1";
  report.pus = Topology::load(report.topology_source).pus();
  std::mt19937 random(1000 + static_cast<unsigned>(node));
  std::uniform_real_distribution<double> jitter(0.97, 1.06);
  for (Mode mode : {Mode::isolated, Mode::concurrent}) {
    RoundSamples round;
    round.mode = mode;
    round.started_unix_seconds = 1700000100;
    round.duration_seconds = 30;
    for (const ProcessingUnit& pu : report.pus) {
      const double slow = (pu.cpu == 5 || pu.cpu == 77) ? 1.4 : 1.0;
      const double noise = pu.cpu == 100 ? 40.0 : 1.0;
      CpuSamples c;
      c.cpu = pu.cpu;
      c.work[ProbeKind::matmul].flops = 2.0 * 128 * 128 * 128 * 32;
      c.work[ProbeKind::stream].bytes = 24u << 20;
      for (int i = 0; i < 7; ++i) {
        c.matmul_seconds.push_back(0.0015 * slow * jitter(random));
        c.samples[ProbeKind::clock].push_back(3.0e9 / jitter(random));
        c.samples[ProbeKind::stream].push_back(0.002 * jitter(random));
        DetourResult d;
        d.window_seconds = 0.025;
        d.count = 10;
        d.total_seconds = 0.0002 * noise * jitter(random);
        d.max_seconds = 0.00005 * noise;
        c.detours.push_back(d);
      }
      round.cpus.push_back(std::move(c));
    }
    report.modes.push_back(make_mode_report(round, report.pus, Thresholds{}));
  }
  return report;
}

int run(MpiEnvironment& env, int reps) {
  if (env.node_count() != env.world_size()) {
    if (env.world_rank() == 0) {
      std::fprintf(stderr,
                   "reduction_bench: %d ranks on %d nodes; run with "
                   "-genv MPIR_CVAR_NUM_CLIQUES %d so that every rank is a leader\n",
                   env.world_size(), env.node_count(), env.world_size());
    }
    return 2;
  }
  const NodeReport report = synthetic_node(env.node_index());
  ReduceOptions options;
  options.modes = {Mode::isolated, Mode::concurrent};  // as collect passes them
  options.started_unix_seconds = 1700000000;

  std::vector<double> times;  // per repetition, the slowest leader's
  std::uint64_t bytes = 0;
  for (int r = 0; r < reps; ++r) {
    env.barrier_leaders();
    const std::uint64_t before = env.bytes_sent();
    const auto start = std::chrono::steady_clock::now();
    const Reduction reduction = reduce_reports(env, &report, "", options);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bytes = env.bytes_sent() - before;  // the same every repetition
    env.allreduce_max(std::span<double>(&seconds, 1));
    times.push_back(seconds);
    if (r == 0 && env.node_index() == 0 &&
        reduction.report.nodes.size() != static_cast<std::size_t>(env.node_count())) {
      std::fprintf(stderr, "reduction_bench: report lists %zu nodes, expected %d\n",
                   reduction.report.nodes.size(), env.node_count());
    }
  }
  std::uint64_t record = bytes;
  const std::vector<std::byte> all = env.gather_records(std::as_bytes(std::span(&record, 1)));
  if (env.world_rank() != 0) return 0;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (std::size_t i = 0; i < all.size(); i += sizeof record) {
    std::uint64_t b;
    std::memcpy(&b, all.data() + i, sizeof b);
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "ranks %d  nodes %d  reps %d  bytes/rank min %llu max %llu  "
      "reduction median %.3f ms (min %.3f, max %.3f)\n",
      env.world_size(), env.node_count(), reps, static_cast<unsigned long long>(lo),
      static_cast<unsigned long long>(hi), times[times.size() / 2] * 1e3, times.front() * 1e3,
      times.back() * 1e3);
  return 0;
}

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  try {
    const auto env = corenoise::open_mpi_environment(&argc, &argv);
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
    return corenoise::run(*env, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reduction_bench: %s\n", e.what());
    return 1;
  }
}
