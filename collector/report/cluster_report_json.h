// ClusterReport as JSON (`corenoise sweep --json`), in base units (seconds,
// hertz, bytes/s, ratios). The schema is documented in docs/sweep.md.
#pragma once

#include <nlohmann/json.hpp>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// Top level: version, started_unix_seconds, duration_seconds, node_count,
// core_count, healthy, settings, nodes, worst, cluster, prediction,
// drain_commands (and cells with --full). NaN and missing figures are null.
nlohmann::json to_json(const ClusterReport& report);

}  // namespace corenoise
