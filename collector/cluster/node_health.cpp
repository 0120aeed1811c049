#include "collector/cluster/node_health.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>

#include "probe/units.h"

namespace corenoise {
namespace {

// Why `node` should be drained, if it should.
std::optional<std::string> drain_reason(const ClusterReport& report, const ClusterNode& node,
                                        double core_slowdown) {
  if (node.outlier) {
    return "node median slowdown " + fixed(node.summary.median_expected_slowdown) + " (robust z " +
           fixed(node.robust_z, 1) + ")";
  }
  if (node.summary.max_expected_slowdown >= core_slowdown && unhealthy_cores(node.summary) > 0) {
    // Name the worst core if the top-K knows it, so the operator can look.
    std::string which;
    for (const auto& w : report.worst) {
      if (w.node == node.index) {
        which = " (cpu " + std::to_string(w.cpu) + " " + std::string(to_string(w.state)) + ")";
        break;
      }
    }
    return "core slowdown " + fixed(node.summary.max_expected_slowdown) + which;
  }
  return std::nullopt;
}

}  // namespace

std::uint64_t unhealthy_cores(const NodeSummary& summary) {
  std::uint64_t count = 0;
  for (std::size_t s = 0; s < kCoreStates; ++s) {
    if (is_unhealthy(kAllCoreStates[s])) count += summary.states[s];
  }
  return count;
}

bool is_healthy(const ClusterNode& node) {
  return unhealthy_cores(node.summary) == 0 && !node.outlier;
}

std::vector<std::string> drain_commands(const ClusterReport& report, double core_slowdown) {
  std::vector<std::string> commands;
  for (const auto& node : report.nodes) {
    if (node.name.empty()) continue;
    std::optional<std::string> reason = drain_reason(report, node, core_slowdown);
    if (!reason) continue;
    // Slurm's reason is one quoted word; a double quote in it would end it.
    std::replace(reason->begin(), reason->end(), '"', '\'');
    commands.push_back("scontrol update nodename=" + node.name +
                       " state=drain reason=\"corenoise: " + *reason + "\"");
  }
  return commands;
}

}  // namespace corenoise
