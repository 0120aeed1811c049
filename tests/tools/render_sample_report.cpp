// Writes the HTML page of a made-up sweep, for looking at the page and for
// the headless-Chromium test: `render_sample_report OUT.html [NODES CORES]`.
// The default 8 nodes × 16 cores hold one noisy core (node 2, cpu 5), one
// throttled node (node 6), one contended core, one skipped core and a node
// name with markup in it, so every kind of cell and every escape shows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "collector/cluster/cluster_report.h"
#include "collector/report/html_report.h"

namespace corenoise {
namespace {

ClusterReport sample(unsigned nodes, unsigned cores) {
  ClusterReport report;
  report.version = "0.1.0-sample";
  report.started_unix_seconds = 1767261600;  // 2026-01-01 10:00 UTC
  report.duration_seconds = 12.4;
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

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::cerr << "usage: render_sample_report OUT.html [NODES CORES]\n";
    return 2;
  }
  const unsigned nodes = argc == 4 ? std::strtoul(argv[2], nullptr, 10) : 8;
  const unsigned cores = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 16;
  const std::string html = corenoise::render_html(corenoise::sample(nodes, cores));
  std::ofstream out(argv[1], std::ios::binary);
  out << html;
  if (!out) {
    std::cerr << "render_sample_report: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
