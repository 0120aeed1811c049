#include "tests/tools/sample_reports.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace corenoise {

ClusterReport sample_sweep(unsigned nodes, unsigned cores) {
  ClusterReport report;
  report.version = "0.1.0-sample";
  report.started_unix_seconds = 1767261600;  // 2026-01-01 10:00 UTC
  report.duration_seconds = 12.4;
  report.layout = "rank-per-node";
  report.node_count = nodes;
  report.settings.modes = {Mode::isolated, Mode::concurrent};
  for (unsigned n = 0; n < nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "cn%03u", n + 101);
    const bool throttled_node = nodes > 6 && n == 6;
    ClusterNode node;
    node.index = n;
    node.name = name;
    if (n == 3) node.name = "cn104<script>alert(1)</script>";  // escaping on view
    NodeCells row;
    row.node = n;
    std::vector<double> values;
    for (unsigned c = 0; c < cores; ++c) {
      CoreCell cell;
      cell.cpu = c;
      cell.state = CoreState::ok;
      // A little deterministic spread around 1, as real sweeps show.
      double v = 1.0 + 0.012 * std::sin(n * 7.3 + c * 1.7);
      if (throttled_node) {
        v = 1.22 + 0.02 * std::sin(c);
        cell.state = CoreState::throttled;
        cell.cause = sample_cause(cell.state);
      } else if (n == 2 && c == 5) {
        v = 1.48;
        cell.state = CoreState::noisy;
        cell.cause = sample_cause(cell.state);
      } else if (n == 4 && c == 11 % cores) {
        v = 1.09;
        cell.state = CoreState::contended;
        cell.cause = sample_cause(cell.state);
      } else if (n == 0 && c == cores - 1) {
        cell.state = CoreState::skipped;
        cell.cause = sample_cause(cell.state);
        row.cores.push_back(cell);
        node.summary.states[static_cast<std::size_t>(CoreState::skipped)]++;
        continue;
      }
      cell.expected_slowdown = throttled_node ? 1.0 + 0.01 * std::sin(c) : v;
      cell.cluster_slowdown = v;
      values.push_back(v);
      row.cores.push_back(cell);
      node.summary.states[static_cast<std::size_t>(cell.state)]++;
    }
    node.summary.node = n;
    node.summary.probed_cores = static_cast<std::uint32_t>(values.size());
    std::sort(values.begin(), values.end());
    node.summary.median_expected_slowdown = values.empty() ? NAN : values[values.size() / 2];
    node.summary.max_expected_slowdown = values.empty() ? NAN : values.back();
    node.summary.median_clock_hertz = throttled_node ? 2.46e9 : 3.0e9;
    node.summary.median_noise_ratio = 0.004;
    node.robust_z = throttled_node ? 41.0 : 0.3 * std::sin(n);
    node.outlier = throttled_node;
    report.core_count += values.size();
    report.nodes.push_back(node);
    report.cells.push_back(std::move(row));
  }
  // Worst cores, as the top-K reduction would rank them (worst first).
  for (const NodeCells& row : report.cells)
    for (const CoreCell& cell : row.cores)
      if (cell.state != CoreState::ok && cell.state != CoreState::skipped)
        report.worst.push_back({row.node, report.nodes[row.node].name, cell.cpu, cell.state,
                                Mode::concurrent, *cell.expected_slowdown, cell.cluster_slowdown,
                                cell.cause});
  std::stable_sort(report.worst.begin(), report.worst.end(), [](const auto& a, const auto& b) {
    return a.cluster_slowdown.value_or(0) > b.cluster_slowdown.value_or(0);
  });
  if (report.worst.size() > kTopK) report.worst.resize(kTopK);
  report.quantiles = {
      {Metric::expected_slowdown, Mode::concurrent, "", report.core_count, 0.981, 1.0, 1.011, 1.21,
       1.48},
      {Metric::cluster_slowdown, Mode::concurrent, "", report.core_count, 0.985, 1.0, 1.05, 1.23,
       1.48},
      {figure_metric(ProbeKind::clock), Mode::concurrent, "IntelCore", report.core_count, 2.41e9,
       3.0e9, 3.0e9, 3.01e9, 3.02e9},
      {figure_metric(ProbeKind::detour), Mode::concurrent, "IntelCore", report.core_count, 0.0,
       0.004, 0.007, 0.02, 0.315},
  };
  report.prediction = ImbalancePrediction{.step_seconds = 0.030,
                                          .cores = report.core_count,
                                          .median_slowdown = 1.0,
                                          .max_slowdown = 1.48,
                                          .wait_seconds = 0.030 * 0.48,
                                          .ranks = 3840,
                                          .expected_max_slowdown = 1.47,
                                          .predicted_wait_seconds = 0.030 * 0.47,
                                          .quantile_max_slowdown = 1.46};
  if (nodes > 6) {
    report.drain_commands.push_back(
        "scontrol update NodeName=" + report.nodes[6].name +
        " State=DRAIN Reason=\"corenoise: throttled, median slowdown 1.22\"");
  }
  if (nodes > 2 && cores > 5) {
    report.drain_commands.push_back("# " + report.nodes[2].name +
                                    " cpu 5 noisy (1.48): move irq 45 off it, or exclude it "
                                    "with a Slurm core specialization (CoreSpecCount)");
  }
  report.healthy = false;
  return report;
}

namespace {

// A clean rank: 8 s computing, 7.5 s of it on its CPU, 12 s waiting, on
// its CPU all that time (MPI polls), a tenth of it in exchanges.
RankRecord clean_rank(int rank, const std::string& host, unsigned cpu) {
  RankRecord r;
  r.rank = rank;
  r.host = host;
  r.cpus = {cpu};
  r.pid = 4000 + rank;
  r.config.busy_threads_peak = 1;
  r.config.node_cpus = 4;
  RankMeasures& m = r.measures;
  m.elapsed_seconds = 20 + 0.001 * rank;
  m.compute_seconds = 8 + 0.002 * (rank % 3);
  m.compute_cpu_seconds = 7.5 + 0.002 * (rank % 3);
  m.wait_seconds = 12;
  m.wait_cpu_seconds = 12;
  m.calls = 300;
  m.steps = 100;
  m.samples = 80;
  m.overhead_seconds = 0.004;
  m.own_threads_seconds = 0.25;
  m.other_processes_seconds = 0.25;
  m.interrupt_seconds = 0.125;
  m.minor_faults = 1000;
  m.fault_seconds = 0.0625;
  m.involuntary_switches = 40;
  m.clock_hz = 2.4e9;
  m.exchange_wait_seconds = 1.2;
  m.off_cpu_seconds = off_cpu(m);
  r.sites = {{"MPI_Allreduce", "solver.py:88", 100, 10.5, 0.25},
             {"MPI_Recv", "halo.c:31", 200, 1.2, 0.0625}};
  return r;
}

}  // namespace

SampleJob sample_job() {
  SampleJob job;
  JobFacts& f = job.facts;
  f.version = "0.1.0-sample";
  f.program = "python3 jax_mpi.py --steps 100";
  f.family = "openmpi";
  f.started_unix_seconds = 1767261600;  // 2026-01-01 10:00 UTC
  f.ranks_total = 8;
  f.steps = 100;
  f.steps_per_column = 25;
  f.clock_source = "perf_event";
  f.mpi_library = "/usr/lib/x86_64-linux-gnu/libmpi.so.40";
  f.mpi_library_version =
      "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4";
  for (int r = 0; r < 8; ++r)
    job.records.push_back(clean_rank(r, r < 4 ? "cn101" : "cn102", static_cast<unsigned>(r % 4)));

  // Rank 2 computed 1 s longer behind its own threads (one of them named
  // in bytes that are not UTF-8) and made the others wait 3 s, 1 s of it
  // in exchanges.
  RankRecord& r2 = job.records[2];
  // Its configuration says so too: three threads busy at once on one CPU.
  r2.config.busy_threads_peak = 3;
  r2.measures.compute_seconds = 9;
  r2.measures.own_threads_seconds = 2.25;
  r2.measures.wait_caused_seconds = 3;
  r2.measures.exchange_wait_caused_seconds = 1;
  r2.measures.off_cpu_seconds = off_cpu(r2.measures);
  r2.threads = {{"omp-worker", 1.5},
                {"xla\xff\xfe"
                 "eigen",
                 0.5},
                {"idle", 0}};
  // Rank 5 lost 0.75 s to another process on its CPU and caused 1 s.
  RankRecord& r5 = job.records[5];
  r5.measures.compute_seconds = 8.75;
  r5.measures.other_processes_seconds = 1.0;
  r5.measures.wait_caused_seconds = 1;
  r5.measures.off_cpu_seconds = off_cpu(r5.measures);
  // Rank 6 ran at a slower clock on its CPU and caused 0.5 s.
  RankRecord& r6 = job.records[6];
  r6.measures.compute_seconds = 8.6;
  r6.measures.compute_cpu_seconds = 8.1;
  r6.measures.clock_hz = 2.1e9;
  r6.measures.wait_caused_seconds = 0.5;
  r6.measures.off_cpu_seconds = off_cpu(r6.measures);
  // Each node's reporting rank: other processes per CPU, and corenoised's
  // verdicts (node cn102's daemon did not answer).
  RankRecord& r0 = job.records[0];
  r0.node_culprits = {{1, 700, "updatedb", 0.5}};
  r0.node_daemon =
      std::map<unsigned, DaemonVerdict>{{0, {"ok", {}, 5.0}},
                                        {1, {"ok", {}, 5.0}},
                                        {2, {"noisy", sample_cause(CoreState::noisy), 5.0}},
                                        {3, {"ok", {}, 5.0}}};
  RankRecord& r4 = job.records[4];
  r4.node_culprits = {{1, 900, "stress-ng", 0.9}, {3, 901, "backup<script>", 0.2}};
  r4.sites.push_back({"MPI_Bcast", "init.py:12", 1, 0.5, 0.5});
  // Its first 2 steps are the warm-up: every rank's measures then are 2 %
  // of its job's, but rank 7 compiled 0.25 s longer (a JIT on one rank)
  // and kept the others waiting 0.25 s at step 2, in the warm-up alone.
  f.warmup_steps = 2;
  // What-if: rank 2's own threads, removed, would have ended the job
  // 0.43 s sooner (it waited 3.00 s of the others' waiting: 7 ranks);
  // rank 7's warm-up compile 0.25 s.
  f.savings = {{2, 0.43}, {7, 0.25}};
  for (RankRecord& r : job.records) {
    RankMeasures w;
    for (std::size_t i = 0; i < kRankMeasureCount; ++i)
      as_array(w)[i] = as_array(r.measures)[i] * 0.02;
    w.clock_hz = r.measures.clock_hz;
    w.steps = 2;
    w.wait_caused_seconds = 0;
    w.exchange_wait_caused_seconds = 0;
    r.warmup = w;
  }
  RankRecord& r7 = job.records[7];
  for (RankMeasures* m : {&r7.measures, &*r7.warmup}) {
    m->compute_seconds += 0.25;
    m->compute_cpu_seconds += 0.25;
    m->wait_caused_seconds += 0.25;
  }
  f.worst_steps = {{2, 1, 0.25, 7, "MPI_Barrier", "jax_mpi.py:41 in main"},
                   {58, 1, 0.125, 2, "MPI_Allreduce", "solver.py:88"}};
  f.lateness.assign(8, std::vector<float>(4, 0.0f));
  f.lateness[2] = {0.75f, 0.75f, 0.75f, 0.75f};
  f.lateness[5] = {0.0f, 0.5f, 0.0f, 0.5f};
  f.lateness[6] = {0.125f, 0.125f, 0.125f, 0.1f};
  return job;
}

}  // namespace corenoise
