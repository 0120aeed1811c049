// From "this leader's NodeReport" to "leader 0's ClusterReport": the
// reductions of docs/scaling.md (kinds, pass-1 histograms, pass-2 cluster
// slowdowns, top-K, per-node summaries, worst cores' details, --full cells)
// and the report's assembly, judged by the sweep's policy (node_health.h).
// Shared by `corenoise sweep` and `corenoise collect`.
//
// A leader collective: every leader calls it once, in the same place. Not
// pure: it talks MPI through the MpiEnvironment and, with --verbose, writes
// one line to stderr. Threading: the MpiEnvironment's, its main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collector/cluster/cluster_report.h"
#include "collector/cluster/cluster_stats.h"
#include "collector/mpi/mpi_environment.h"
#include "probe/report.h"

namespace corenoise {

struct ReduceOptions {
  ProbeSettings settings;              // shown in the report
  std::vector<Mode> modes;             // for quantiles and the prediction; empty: every
                                       // mode any node reported (agreed over the leaders)
  bool full = false;                   // gather every core's cells (--full)
  std::optional<std::uint64_t> ranks;  // job size for the barrier-wait prediction
  double started_unix_seconds = 0;
  bool verbose = false;
  std::string prefix;  // "corenoise sweep: node N: " for messages
};

struct Reduction {
  ClusterReport report;  // complete on leader 0 only
  // On every leader: the agreed kinds and the reduced histograms, from which
  // cluster_reference() gives the cluster's reference core of a (mode, kind).
  KindTable kinds;
  std::unique_ptr<ClusterHistograms> histograms;
};

// `mine` is null when this node has nothing to contribute (its daemon is
// missing or refused); `error` then says why, and the node is listed with
// it in the report (no cores). Throws on MPI failure only.
Reduction reduce_reports(MpiEnvironment& env, const NodeReport* mine, const std::string& error,
                         const ReduceOptions& options);

}  // namespace corenoise
