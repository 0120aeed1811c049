// The fix the job's views advise for a late rank's main cause
// (collector/report/cause_advice.h's sentence), and where the views name a
// process the rank waited behind, the pointer to it: "find the process
// named here" only where a process is named, so a rank that waited behind
// other processes none of which the sampler caught is not sent looking.
//
// Pure. Thread-safety: a free function of its arguments.
#pragma once

#include <string>

#include "collector/job/model/job_report.h"

namespace corenoise {

// The advice for `rank`'s main cause, which it must have.
std::string rank_advice(const JobRank& rank);

}  // namespace corenoise
