// Rank 0's outputs at the job's end, and `corenoise job --report`'s: the
// report's JSON (--json), its page (--html) and the banner on stderr
// (unless --quiet), through the one writer of every command
// (report/report_outputs.h). Never throws: a file that cannot be written is
// said on stderr, and the rest is still written.
//
// Reached from two places only, both above the job's layers: the in-job
// library's wiring (collector/job/job_wiring.cpp, which hands it to the
// rank runtime as its publisher) and `corenoise job --report`
// (cli/job_command.cpp).
#pragma once

#include "collector/job/model/job_options.h"
#include "collector/job/model/job_report.h"

namespace corenoise {

void write_job_outputs(const JobReport& report, const JobOptions& options);

}  // namespace corenoise
