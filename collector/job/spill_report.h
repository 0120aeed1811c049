// The report of a job that ended before MPI_Finalize (killed, or a rank
// lost and the launcher killing the rest), from the spill files its ranks
// left (spill_file.h): `corenoise job --report DIR`. The steps compared are
// those every rank finished; the measures are each rank's as of its last
// sample. Call sites, thread names and the node's other processes are not
// kept in the files, so this report has none. Pure but for reading DIR.
#pragma once

#include <string>
#include <vector>

#include "collector/job/job_report.h"
#include "collector/job/spill_file.h"

namespace corenoise {

struct SpillReport {
  JobFacts facts;
  std::vector<RankRecord> records;
};

SpillReport report_from_spills(const std::vector<SpilledRank>& ranks);

// Every rank-*.spill in `dir`; files that are not readable spill files are
// named in `*problems`.
std::vector<SpilledRank> read_spill_dir(const std::string& dir, std::string* problems);

}  // namespace corenoise
