// NodeReport as JSON, in base units (seconds, hertz, bytes/s, ratios 0-1).
// The schema is documented in docs/json.md.
#pragma once

#include <nlohmann/json.hpp>

#include "probe/report.h"

namespace corenoise {

nlohmann::json to_json(const NodeReport& report);

// The inverse, for readers of another process's report (`corenoise collect`
// reads each daemon's): PUs (cpu, core, package, NUMA node, kind), rounds
// with their references, and every core's figures and verdict per mode.
// Settings, ISA and the detour histograms are not read back. Throws
// nlohmann::json::exception or std::invalid_argument on a document that is
// not such a report.
NodeReport node_report_from_json(const nlohmann::json& doc);

}  // namespace corenoise
