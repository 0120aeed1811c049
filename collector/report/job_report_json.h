// The JSON view of a job's report (docs/job.md, schema "corenoise-job/1"):
// what `corenoise job --json` writes and the page (report_page.h) draws.
// Pure: no I/O. Thread-safety: a free function of its argument.
#pragma once

#include <nlohmann/json.hpp>

#include "collector/job/model/job_report.h"

namespace corenoise {

nlohmann::json to_json(const JobReport& report);

}  // namespace corenoise
