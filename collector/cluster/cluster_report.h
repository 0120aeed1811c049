// One sweep's (or collect's) answer for a whole allocation, as plain data:
// what rank 0 holds after the reductions, and what the terminal summary,
// the JSON (`--json`) and the HTML page (`--html`) are rendered from.
// Nothing here is proportional to the total number of cores except `cells`,
// which is filled only with --full.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collector/cluster/cluster_stats.h"
#include "probe/analysis.h"
#include "probe/settings.h"

namespace corenoise {

struct ClusterNode {
  std::uint32_t index = 0;  // the node's index in the job (leader rank)
  std::string name;         // the node's hostname, for people only (never a key)
  NodeSummary summary;
  double robust_z = 0;  // of its median expected slowdown across nodes
  bool outlier = false;
  std::string error;  // collect: why this node contributed nothing (empty if it did)
};

struct WorstCoreEntry {
  std::uint32_t node = 0;
  std::string node_name;
  unsigned cpu = 0;
  CoreState state = CoreState::ok;
  Mode mode = Mode::isolated;
  double expected_slowdown = 0;            // against its node's reference
  std::optional<double> cluster_slowdown;  // against the cluster's reference
  Cause cause;
};

// Cluster quantiles of one metric in one mode for one CPU kind.
struct MetricQuantiles {
  Metric metric = Metric::expected_slowdown;
  Mode mode = Mode::isolated;
  std::string kind;
  std::uint64_t count = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// One heatmap cell (--full): a core of a node.
struct CoreCell {
  unsigned cpu = 0;
  CoreState state = CoreState::skipped;
  std::optional<double> expected_slowdown;  // node-relative
  std::optional<double> cluster_slowdown;   // cluster-relative
  Cause cause;
};

struct NodeCells {
  std::uint32_t node = 0;
  std::vector<CoreCell> cores;  // by cpu
};

struct ClusterReport {
  std::string version;
  double started_unix_seconds = 0;
  double duration_seconds = 0;
  std::uint32_t node_count = 0;
  std::uint64_t core_count = 0;  // probed
  // Who measured: "rank-per-node" or "rank-per-core" (sweep), "daemons"
  // (collect).
  std::string layout;
  ProbeSettings settings;
  std::vector<ClusterNode> nodes;     // by index
  std::vector<WorstCoreEntry> worst;  // worst first, at most kTopK
  std::vector<MetricQuantiles> quantiles;
  std::optional<ImbalancePrediction> prediction;
  std::vector<std::string> drain_commands;  // printed for the operator, never run
  std::vector<NodeCells> cells;             // only with --full
  bool healthy = true;                      // no unhealthy core and no outlier node
};

}  // namespace corenoise
