// Writes the report page of a made-up sweep or job, for looking at the page,
// for the headless-Chromium tests and for tests/bench/report_page_bench.sh:
//
//   render_sample_report OUT.html [NODES CORES]        a sweep (8 × 16)
//   render_sample_report --job OUT.html [RANKS COLUMNS] a job (120 × 200)
//
// The default sweep holds one noisy core (node 2, cpu 5), one throttled node
// (node 6), one contended core, one skipped core and a node name with markup
// in it, so every kind of cell and every escape shows. The job has 120 ranks
// per node, on time within a few microseconds, except three late ones with
// different causes (ranks 5, 17 and 2, worst first) and a hostile culprit
// name; its lateness is written as corenoise job writes it (floats).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "collector/cluster/cluster_report.h"
#include "collector/report/html_report.h"
#include "collector/report/report_page.h"

namespace corenoise {
namespace {

ClusterReport sample(unsigned nodes, unsigned cores) {
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
        cell.cause = "clock 2.46 GHz vs 3.00 GHz reference (ratio 1.22): package power limit";
      } else if (n == 2 && c == 5) {
        v = 1.48;
        cell.state = CoreState::noisy;
        cell.cause = "lost 31.5 % to 2,410 detours (max 412 µs): irq 45 (mlx5_comp3) 2,390×";
      } else if (n == 4 && c == 11 % cores) {
        v = 1.09;
        cell.state = CoreState::contended;
        cell.cause = "stream 1.31× slower with normal clock and noise: memory path";
      } else if (n == 0 && c == cores - 1) {
        cell.state = CoreState::skipped;
        cell.cause = "outside the process's affinity";
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
      {Metric::clock_hertz, Mode::concurrent, "IntelCore", report.core_count, 2.41e9, 3.0e9, 3.0e9,
       3.01e9, 3.02e9},
      {Metric::noise_ratio, Mode::concurrent, "IntelCore", report.core_count, 0.0, 0.004, 0.007,
       0.02, 0.315},
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

// The job report's JSON ("corenoise-job/1"): `ranks` ranks × `columns`
// lateness columns, one step per column.
nlohmann::json job_sample(unsigned ranks, unsigned columns) {
  using nlohmann::json;
  constexpr unsigned kRanksPerNode = 120;
  const std::vector<std::string> causes = {"own-threads", "other-processes", "interrupts", "steal",
                                           "page-faults", "slower-clock",    "more-work"};
  std::mt19937_64 random(42);
  std::exponential_distribution<double> jitter(1 / 3e-6);  // a few µs
  std::uniform_real_distribution<double> unit(0, 1);
  auto micro = [](double seconds) { return std::round(seconds * 1e6) / 1e6; };
  // The late ranks, worst first, and how late they are at a column.
  struct Late {
    unsigned rank;
    std::string cause, advice, culprit_kind, culprit;
    double every, seconds;  // late at one column in `every`, by about `seconds`
  };
  std::vector<Late> late = {
      {5, "own-threads",
       "Pin the job's helper threads off the rank's core (OMP_PROC_BIND, or fewer threads).",
       "thread", "python3", 1, 0.0011},
      {17, "other-processes",
       "Move the other process off the job's cores, or leave it a core of its own.", "process",
       "stress-ng", 10, 0.004},
      {2, "interrupts",
       "Steer the interrupt off this core (irqbalance banned CPUs, or smp_affinity).", "process",
       "irq/45-mlx5<script>alert(1)</script>", 50, 0.002},
  };
  late.erase(
      std::remove_if(late.begin(), late.end(), [&](const Late& l) { return l.rank >= ranks; }),
      late.end());

  // Lateness first, then what it means: at each column every rank waits
  // for the last one, and the last one caused everybody's wait beyond the
  // second-last's arrival.
  std::vector<double> lateness(std::size_t{ranks} * columns);
  std::vector<double> excess(ranks, 0.0), wait(ranks, 0.0), caused(ranks, 0.0);
  for (unsigned r = 0; r < ranks; ++r) {
    const auto it =
        std::find_if(late.begin(), late.end(), [&](const Late& l) { return l.rank == r; });
    for (unsigned c = 0; c < columns; ++c) {
      double v = jitter(random);
      if (it != late.end() && std::fmod(c, it->every) == 0)
        v += it->seconds * (0.6 + 0.8 * unit(random));
      lateness[std::size_t{r} * columns + c] = static_cast<float>(v);
    }
  }
  for (unsigned c = 0; c < columns; ++c) {
    double first = INFINITY, last = -INFINITY, second = -INFINITY;
    unsigned latest = 0;
    for (unsigned r = 0; r < ranks; ++r) {
      const double v = lateness[std::size_t{r} * columns + c];
      first = std::min(first, v);
      if (v > last) {
        second = last;
        last = v;
        latest = r;
      } else {
        second = std::max(second, v);
      }
    }
    for (unsigned r = 0; r < ranks; ++r) {
      const double v = lateness[std::size_t{r} * columns + c];
      wait[r] += last - v;
      excess[r] += v - first;
    }
    if (ranks > 1) caused[latest] += (last - second) * (ranks - 1);
  }

  json rows = json::array();
  json ranks_json = json::array();
  json total_causes = json::object();
  for (const std::string& cause : causes) total_causes[cause] = 0.0;
  double wait_total = 0, compute_total = 0, caused_total = 0;
  for (unsigned r = 0; r < ranks; ++r) {
    const auto it =
        std::find_if(late.begin(), late.end(), [&](const Late& l) { return l.rank == r; });
    json row = json::array();
    // As corenoise job writes them: floats, each in the JSON as the double
    // it converts to (up to 17 digits).
    for (unsigned c = 0; c < columns; ++c)
      row.push_back(static_cast<float>(lateness[std::size_t{r} * columns + c]));
    rows.push_back(std::move(row));
    char host[32];
    std::snprintf(host, sizeof host, "node%03u", r / kRanksPerNode + 1);
    json rank_causes = json::object();
    for (const std::string& cause : causes) rank_causes[cause] = 0.0;
    const double compute = columns * 0.01 - excess[r];
    json rank = {{"rank", r},
                 {"host", host},
                 {"cpus", std::to_string(r % kRanksPerNode)},
                 {"wait_seconds", micro(wait[r])},
                 {"compute_seconds", micro(compute)},
                 {"wait_caused_seconds", micro(caused[r])},
                 {"excess_seconds", micro(excess[r])},
                 {"cause", "none"},
                 {"causes", rank_causes},
                 {"advice", ""},
                 {"culprits", json::array()},
                 {"daemon", nullptr}};
    if (it != late.end()) {
      const double share = excess[r];
      rank["cause"] = it->cause;
      rank["causes"][it->cause] = micro(share * 0.9);
      rank["causes"]["page-faults"] = micro(share * 0.05);
      rank["advice"] = it->advice;
      rank["culprits"] = json::array(
          {{{"kind", it->culprit_kind}, {"name", it->culprit}, {"seconds", micro(share * 0.85)}}});
      rank["daemon"] = json{
          {"state", "noisy"}, {"cause", "lost 4 % to detours: " + it->cause}, {"age_seconds", 12}};
      total_causes[it->cause] = total_causes[it->cause].get<double>() + micro(share * 0.9);
      total_causes["page-faults"] = total_causes["page-faults"].get<double>() + micro(share * 0.05);
    }
    wait_total += wait[r];
    compute_total += compute;
    caused_total += caused[r];
    ranks_json.push_back(std::move(rank));
  }
  json worst = json::array();
  for (const Late& l : late) worst.push_back(l.rank);
  return {{"schema", "corenoise-job/1"},
          {"version", "0.1.0-sample"},
          {"program", "python3 jax_mpi.py --steps " + std::to_string(columns)},
          {"mpi_family", "openmpi"},
          {"started_unix_seconds", 1767261600},
          {"elapsed_seconds", columns * 0.0102},
          {"ranks_total", ranks},
          {"ranks_reported", ranks},
          {"nodes", (ranks + kRanksPerNode - 1) / kRanksPerNode},
          {"steps", columns},
          {"complete", true},
          {"incomplete_reason", nullptr},
          {"wait_seconds", micro(wait_total)},
          {"compute_seconds", micro(compute_total)},
          {"wait_caused_seconds", micro(caused_total)},
          {"causes", total_causes},
          {"call_sites", json::array({{{"call", "MPI_Allreduce"},
                                       {"site", "MPI.cpython-311-x86_64-linux-gnu.so+0x1a2b3"},
                                       {"calls", columns},
                                       {"wait_seconds", micro(wait_total * 0.8)},
                                       {"wait_max_seconds", 0.0042}},
                                      {{"call", "MPI_Barrier"},
                                       {"site", "libjax_mpi.so+0x4410"},
                                       {"calls", columns},
                                       {"wait_seconds", micro(wait_total * 0.2)},
                                       {"wait_max_seconds", 0.0011}}})},
          {"ranks", ranks_json},
          {"worst_ranks", worst},
          {"lateness",
           {{"unit", "seconds"}, {"steps_per_column", 1}, {"columns", columns}, {"rows", rows}}}};
}

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  const bool job = argc > 1 && std::string_view(argv[1]) == "--job";
  const int first = job ? 2 : 1;  // OUT.html
  if (argc - first != 1 && argc - first != 3) {
    std::cerr << "usage: render_sample_report OUT.html [NODES CORES]\n"
                 "       render_sample_report --job OUT.html [RANKS COLUMNS]\n";
    return 2;
  }
  const bool sized = argc - first == 3;
  const unsigned a = sized ? std::strtoul(argv[first + 1], nullptr, 10) : job ? 120 : 8;
  const unsigned b = sized ? std::strtoul(argv[first + 2], nullptr, 10) : job ? 200 : 16;
  const std::string html = job ? corenoise::render_report_page(corenoise::job_sample(a, b))
                               : corenoise::render_html(corenoise::sample(a, b));
  std::ofstream out(argv[first], std::ios::binary);
  out << html;
  if (!out) {
    std::cerr << "render_sample_report: cannot write " << argv[first] << "\n";
    return 1;
  }
  return 0;
}
