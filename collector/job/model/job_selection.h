// Every rank judged from its summary (rank_summary.h), and which ranks a
// report holds in full. Rank 0 runs both at MPI_Finalize before it asks
// for any record, and build_job_report runs them again on the same
// summaries: the ranks it names are the ranks whose records came.
//
// Pure, like job_report.h.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "collector/job/model/attribution.h"
#include "collector/job/model/rank_summary.h"

namespace corenoise {

struct JobJudgement {
  RankMeasures reference;     // reference_rank() of every summary's measures
  CauseThresholds threshold;  // cause_threshold() against it
  // In the summaries' order: each rank's main cause, where it is late
  // (is_late). A byte or so a rank: its attribution is made again where
  // wanted (attribution_of), not kept for 100,000 ranks.
  std::vector<std::optional<JobCause>> late;

  // A rank's attribution; main_cause set only for a late rank.
  RankAttribution attribution_of(const RankMeasures& measures) const;
};

JobJudgement judge_ranks(std::span<const RankSummary> all);

// The late ranks that caused any waiting, most first, as indices into
// `all`: a report names these (at most kWorstRanks).
inline constexpr std::size_t kWorstRanks = 20;
std::vector<std::size_t> worst_ranks(std::span<const RankSummary> all, const JobJudgement& judged);

// Every rank's record in full up to this many ranks (corenoise job --full).
inline constexpr std::size_t kDefaultFullRanks = 64;

// The ranks (ascending) whose records a report holds: all of them when
// the job reported at most `full`; else the worst ranks, on each node the
// rank that caused the most waiting there, and any rank in `asked` (each
// node's first rank then sends its node's digest, node_digest.h).
std::vector<int> ranks_in_full(std::span<const RankSummary> all, const JobJudgement& judged,
                               std::size_t full, std::span<const int> asked = {});

}  // namespace corenoise
