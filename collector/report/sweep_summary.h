// The terminal view of a sweep's ClusterReport, and the Slurm drain commands
// an operator would run for the nodes it condemns (printed, never run).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// A node is worth draining when it is an outlier across nodes, or when one
// of its cores is this much slower than its node's reference and the node
// has a confirmed unhealthy core (a transient one never drains): one such
// core makes every bulk-synchronous job on the node wait for it.
inline constexpr double kDrainCoreSlowdown = 1.5;

// `scontrol update nodename=NAME state=drain reason="corenoise: ..."`, one per
// node to drain, in node order. Nodes without a name are left out (Slurm
// needs the name; the index means nothing to it).
std::vector<std::string> drain_commands(const ClusterReport& report,
                                        double core_slowdown = kDrainCoreSlowdown);

// Cluster quantiles, the `top` worst cores (node, cpu, state, cause), the
// worst nodes, the predicted barrier wait, the drain commands, and a final
// one-line verdict, headed by `command` ("sweep", "collect"). `quiet`
// prints only the verdict line.
void print_sweep_summary(std::ostream& out, const ClusterReport& report, std::size_t top,
                         bool quiet, const std::string& command = "sweep");

}  // namespace corenoise
