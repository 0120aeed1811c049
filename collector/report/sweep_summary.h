// The terminal view of a sweep's (or collect's) ClusterReport. A view only:
// which nodes are unhealthy or to be drained is decided beside the model
// (collector/cluster/node_health.h), and this prints what was decided.
//
// Writes to the stream it is given and nothing else; no shared state, so
// calls with different streams may run on different threads.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// Cluster quantiles, the `top` worst cores (node, cpu, state, cause), the
// worst nodes, the predicted barrier wait, the drain commands, and a final
// one-line verdict, headed by `command` ("sweep", "collect"). `quiet`
// prints only the verdict line.
void print_sweep_summary(std::ostream& out, const ClusterReport& report, std::size_t top,
                         bool quiet, const std::string& command = "sweep");

}  // namespace corenoise
