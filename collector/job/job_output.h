// Rank 0's outputs at the job's end: the report's JSON (--json), its page
// (--html) and the banner on stderr. Files are written under a temporary
// name and renamed into place, so a reader sees the previous report or the
// new one, never half of one.
#pragma once

#include <vector>

#include "collector/job/job_options.h"
#include "collector/job/job_report.h"

namespace corenoise {

void write_job_outputs(const JobFacts& facts, const std::vector<RankRecord>& records,
                       const JobOptions& options);

}  // namespace corenoise
