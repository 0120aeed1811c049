#include "collector/report/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "collector/cluster/node_health.h"
#include "probe/units.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

// Metrics in their natural units for people (each kind's Display); JSON
// keeps base units.
std::string metric_value(Metric metric, double value) {
  if (!std::isfinite(value)) return std::string(kMissing);
  const auto kind = kind_of(metric);
  if (!kind) return fixed(value, 3);
  const Display& d = descriptor(*kind).display;
  return fixed(value * d.multiply / d.divide, d.decimals) + " " + std::string(d.unit);
}

std::string node_label(const ClusterReport& report, std::uint32_t index) {
  for (const auto& n : report.nodes) {
    if (n.index == index && !n.name.empty()) return n.name + " (" + std::to_string(index) + ")";
  }
  return "node " + std::to_string(index);
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

void print_quantiles(std::ostream& out, const ClusterReport& report) {
  out << "Cluster quantiles\n";
  out << "  " << padded("metric", 24) << padded("mode", 12) << padded("kind", 12)
      << padded("count", 8) << padded("p50", 14) << padded("p90", 14) << padded("p99", 14)
      << "max\n";
  for (const auto& q : report.quantiles) {
    out << "  " << padded(std::string(to_string(q.metric)), 24)
        << padded(std::string(to_string(q.mode)), 12) << padded(q.kind, 12)
        << padded(std::to_string(q.count), 8) << padded(metric_value(q.metric, q.p50), 14)
        << padded(metric_value(q.metric, q.p90), 14) << padded(metric_value(q.metric, q.p99), 14)
        << metric_value(q.metric, q.max) << '\n';
  }
}

void print_worst_cores(std::ostream& out, const ClusterReport& report, std::size_t top) {
  const std::size_t shown = std::min(top, report.worst.size());
  out << "\nWorst " << shown << " cores (expected slowdown against the node's reference)\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& w = report.worst[i];
    out << "  " << padded(node_label(report, w.node), 24)
        << padded("cpu " + std::to_string(w.cpu), 9) << padded(std::string(to_string(w.state)), 10)
        << padded(fixed(w.expected_slowdown), 8)
        << padded(w.cluster_slowdown ? "cluster " + fixed(*w.cluster_slowdown) : "", 15)
        << padded(std::string(to_string(w.mode)), 11) << cause_text(w.cause) << '\n';
  }
}

// Worst nodes by median expected slowdown: a node slow as a whole hurts
// every job placed on it, which single cores do not show.
void print_worst_nodes(std::ostream& out, const ClusterReport& report) {
  std::vector<const ClusterNode*> nodes;
  for (const auto& n : report.nodes) nodes.push_back(&n);
  const auto median = [](const ClusterNode* n) {
    return std::isfinite(n->summary.median_expected_slowdown) ? n->summary.median_expected_slowdown
                                                              : -1;
  };
  std::stable_sort(nodes.begin(), nodes.end(), [&](const ClusterNode* a, const ClusterNode* b) {
    return median(a) > median(b);
  });
  const std::size_t worst_nodes = std::min<std::size_t>(nodes.size(), 5);
  out << "\nWorst nodes (median / max expected slowdown, robust z across nodes)\n";
  for (std::size_t i = 0; i < worst_nodes; ++i) {
    const ClusterNode& n = *nodes[i];
    out << "  " << padded(node_label(report, n.index), 24)
        << padded(fixed(n.summary.median_expected_slowdown), 8)
        << padded(fixed(n.summary.max_expected_slowdown), 8)
        << padded("z " + fixed(n.robust_z, 1), 9) << (n.outlier ? "OUTLIER" : "") << '\n';
  }
}

void print_prediction(std::ostream& out, const ImbalancePrediction& p) {
  out << "\nBarrier wait of a fixed-work step of " << fixed(p.step_seconds * 1e3, 3)
      << " ms (docs/scaling.md)\n"
      << "  this allocation: " << p.cores << " cores, median slowdown " << fixed(p.median_slowdown)
      << ", max " << fixed(p.max_slowdown) << " -> wait " << fixed(p.wait_seconds * 1e3, 3)
      << " ms per step\n"
      << "  " << p.ranks << " ranks drawn from it: E[max] " << fixed(p.expected_max_slowdown)
      << " -> wait " << fixed(p.predicted_wait_seconds * 1e3, 3) << " ms per step\n";
}

std::string verdict_line(const ClusterReport& report, const std::string& command) {
  std::size_t unhealthy = 0;
  std::size_t outliers = 0;
  for (const auto& n : report.nodes) {
    unhealthy += unhealthy_cores(n.summary);
    if (n.outlier) ++outliers;
  }
  return "corenoise " + command + ": " + std::to_string(report.node_count) + " nodes, " +
         std::to_string(report.core_count) + " cores probed in " +
         fixed(report.duration_seconds, 1) + " s: " + std::to_string(unhealthy) +
         " unhealthy cores, " + std::to_string(outliers) + " outlier nodes" +
         (report.prediction ? ", predicted barrier wait " +
                                  fixed(report.prediction->wait_seconds * 1e3, 3) + " ms per step"
                            : std::string());
}

}  // namespace

void print_sweep_summary(std::ostream& out, const ClusterReport& report, std::size_t top,
                         bool quiet, const std::string& command) {
  const std::string verdict = verdict_line(report, command);
  if (quiet) {
    out << verdict << '\n';
    return;
  }
  print_quantiles(out, report);
  print_worst_cores(out, report, top);
  print_worst_nodes(out, report);
  if (report.prediction) print_prediction(out, *report.prediction);
  if (!report.drain_commands.empty()) {
    out << "\nDrain commands (printed, not run):\n";
    for (const auto& c : report.drain_commands) out << "  " << c << '\n';
  }
  out << '\n' << verdict << '\n';
}

}  // namespace corenoise
