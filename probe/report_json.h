// NodeReport as JSON, in base units (seconds, hertz, bytes/s, ratios 0-1).
// The schema is documented in docs/json.md.
#pragma once

#include <nlohmann/json.hpp>

#include "probe/report.h"

namespace corenoise {

nlohmann::json to_json(const NodeReport& report);

}  // namespace corenoise
