// The report of a job that ended before MPI_Finalize (killed, or a rank
// lost and the launcher killing the rest), from the spill files its ranks
// left (model/spill_layout.h, read by spill_reader.h): `corenoise job
// --report DIR`. The steps compared are those every rank finished; the
// measures are each rank's as of its last sample. Call sites, thread names
// and the node's other processes are not kept in the files, so this report
// has none. Pure but for reading DIR.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/rebuild/spill_reader.h"

namespace corenoise {

struct SpillReport {
  JobFacts facts;
  std::vector<RankRecord> records;
  // Every rank's summary, where the report is a live epoch's
  // (report_from_live_epoch): build_job_report judges the ranks from these
  // and shows `records` in full. Empty: every rank is in `records`.
  std::vector<RankSummary> summaries;
};

// Ranks of one job, in any order: the report. Throws std::invalid_argument,
// naming the files, when a rank fails spilled_rank_problem (spill_reader.h)
// or the ranks are not one job's (spill_job_problems). Memory: the common
// steps' bins once more, at most IntervalRecorder::kMaxStepBins per rank.
SpillReport report_from_spills(const std::vector<SpilledRank>& ranks);

// The report of the job's last live epoch, where `dir` holds rank 0's part
// of one (kLiveEpochFile, model/live_epoch.h) and every rank's spill file
// in `ranks` its summary of the same epoch: the live report as rank 0 last
// published it, with facts.live->rebuilt and how many ranks reached
// MPI_Finalize. nullopt where there is none;
// with the reason in `*why` where there is one that cannot be used (not
// readable, another job's, a rank's summary of that epoch missing or not
// sound): the report then comes from the spill files alone.
std::optional<SpillReport> report_from_live_epoch(const std::string& dir,
                                                  const std::vector<SpilledRank>& ranks,
                                                  std::string* why);

// Every rank takes its start time from its own clock as MPI_Init returns,
// within a second of the others where the nodes' clocks are kept by NTP;
// a minute leaves room for unsynchronised clocks, and tells apart any two
// jobs of which the first ran for longer.
inline constexpr double kSameJobStartSeconds = 60;

// Why `ranks` cannot be one job's, one line per file, naming it: the same
// rank twice, or a job size, MPI family or program other than the lowest
// rank's, or a start more than kSameJobStartSeconds from it. Empty when
// they can be. A directory reused by a second job keeps the first job's
// files of the ranks the second did not overwrite (a smaller job, or ranks
// killed as they started); they must not be read as the second's.
std::vector<std::string> spill_job_problems(const std::vector<SpilledRank>& ranks);

// Every rank-N.spill in `dir`, sorted by rank, read with read_spill and
// checked as one job's: every file is used or none is. Throws
// std::runtime_error naming each file that is not usable and why (not a
// spill file, truncated, too long, a bad value, named rank-N but holding
// another rank, another job's), and `dir` when it cannot be read; the
// message says to move those files out of `dir` to report without them
// (the report then names their ranks as missing). A report silently
// without a rank would charge the others' waits to the wrong ranks.
// `*problems` gets what does not stop the report: a rank stopped before
// its first sample, whose figures are zero.
std::vector<SpilledRank> read_spill_dir(const std::string& dir, std::string* problems);

}  // namespace corenoise
