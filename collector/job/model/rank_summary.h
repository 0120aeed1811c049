// What every rank sends rank 0 at MPI_Finalize, whatever the job's size:
// its measures over the job and at the end of the warm-up, and its node,
// as one fixed block of doubles (one small message). Rank 0 judges every
// rank from these alone (job_selection.h) and asks only the ranks its
// report shows in full for their records (rank_record.h), so that what it
// holds grows by this block per rank, not by a record (docs/scaling.md).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collector/job/model/rank_measures.h"
#include "collector/job/model/rank_record.h"

namespace corenoise {

struct RankSummary {
  RankMeasures measures;
  RankMeasures warmup;    // RankRecord::warmup, where has_warmup
  double rank = 0;        // in the job
  double node = 0;        // the job's rank of its node's first rank
  double has_warmup = 0;  // 1 or 0

  int number() const { return static_cast<int>(rank); }
  int node_rank() const { return static_cast<int>(node); }
};

inline constexpr std::size_t kRankSummaryDoubles = sizeof(RankSummary) / sizeof(double);
static_assert(sizeof(RankSummary) == kRankSummaryDoubles * sizeof(double));

inline const double* as_array(const RankSummary& s) { return as_array(s.measures); }
inline double* as_array(RankSummary& s) { return as_array(s.measures); }

RankSummary summary_of(const RankRecord& record, int node);

// Every record's summary, a node being the lowest rank of its host: what
// rank 0 would have received had every record come in full (spill files,
// tests).
std::vector<RankSummary> summaries_of(const std::vector<RankRecord>& records);

// Whether a summary read off the wire can be judged: its rank and node
// ranks of a job of `ranks`, every figure finite, has_warmup 0 or 1.
bool sound(const RankSummary& summary, int ranks);

}  // namespace corenoise
