// The sweep's policy on its model, the ClusterReport: which nodes are
// unhealthy, and which an operator should take out of service, with the
// Slurm command that drains each (printed, never run). The reduction sets
// ClusterReport::healthy and ::drain_commands from these once; every view
// (terminal, JSON, page) shows what they decided and decides nothing again.
//
// Pure: no I/O, no MPI, no clock; plain functions of their arguments, safe
// to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// The node's cores whose state is unhealthy (probe/analysis.h is_unhealthy):
// confirmed noisy, throttled, contended or slow. A transient core (bad in
// one round, not when measured again) is not one.
std::uint64_t unhealthy_cores(const NodeSummary& summary);

// A node is healthy when none of its cores is unhealthy and it is not an
// outlier across nodes. One unhealthy node makes the sweep's exit code 2.
bool is_healthy(const ClusterNode& node);

// A node is worth draining when it is an outlier across nodes, or when one
// of its cores is this much slower than its node's reference and the node
// has an unhealthy core (a transient one never drains): one such core makes
// every bulk-synchronous job on the node wait for it.
inline constexpr double kDrainCoreSlowdown = 1.5;

// `scontrol update nodename=NAME state=drain reason="corenoise: ..."`, one per
// node to drain, in node order. Nodes without a name are left out (Slurm
// needs the name; the index means nothing to it).
std::vector<std::string> drain_commands(const ClusterReport& report,
                                        double core_slowdown = kDrainCoreSlowdown);

}  // namespace corenoise
