// Rank 0's outputs at the job's end, and `corenoise job --report`'s: the
// report's JSON (--json), its page (--html) and the banner on stderr
// (unless --quiet), through the one writer of every command
// (report/report_outputs.h). Never throws: a file that cannot be written is
// said on stderr, and the rest is still written.
//
// Declared here, where the job decides when to publish, and defined with
// the views (collector/report/job_output.cpp), so that the job's code
// includes no view.
#pragma once

#include "collector/job/job_options.h"
#include "collector/job/job_report.h"

namespace corenoise {

void write_job_outputs(const JobReport& report, const JobOptions& options);

}  // namespace corenoise
