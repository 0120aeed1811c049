// The terminal view of a job's report: what rank 0 prints on stderr at
// MPI_Finalize (and `corenoise job --report`): ranks, nodes, steps, the
// time waiting at collectives and in exchanges, the top causes, the worst
// ranks with host, CPU, cause in words, culprits and the node daemon's
// verdicts, the fix that fits each cause, and the costliest call sites.
// Pure. Thread-safety: a free function of its arguments.
#pragma once

#include <string>

#include "collector/job/model/job_report.h"

namespace corenoise {

std::string job_banner(const JobReport& report, int worst_ranks = 5);

}  // namespace corenoise
