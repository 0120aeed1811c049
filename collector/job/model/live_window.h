// A live epoch's own window (docs/job.md, "Live"): every rank's figures
// since the previous epoch, judged as the job's are (job_selection.h).
// An epoch's report over the job so far names a rank once its waiting
// caused passes a share of the whole job, which takes longer the longer
// the job ran before its noise began (an hour in, ~12 minutes for a rank
// that lost 30 % of its CPU). Its window names it at the first epoch
// after: the difference of two epochs' cumulative figures is what the
// rank did between them.
#pragma once

#include <span>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/model/job_selection.h"
#include "collector/job/model/rank_measures.h"
#include "collector/job/model/rank_summary.h"

namespace corenoise {

// What a rank did between two readings of its cumulative measures: each
// figure's difference, never below 0 (a rank's wait caused is recomputed
// each epoch from bins that may have merged since, kMaxStepBins); the
// effective clock, a median, is the later reading's.
RankMeasures measures_since(const RankMeasures& now, const RankMeasures& before);

// The previous epoch's measures, to take the window's from: each rank
// keeps its own, and rank 0 every rank's (kRankMeasureCount doubles a
// rank: 19 MB at 100,000 ranks, beside the 41 MB of their summaries).
// Zero before the first epoch: its window is the job so far.
//
// A rank's waiting caused is recomputed at each epoch from its step bins
// (job_reduction.cpp), exact for the bins every rank had finished, which
// no later step changes. Past kMaxStepBins the bins merge, and a merged
// bin charges its waiting to the rank last in the whole bin: the waiting
// caused before and after a merge are not on one footing, and their
// difference is no window's. So a window is judged only between two
// epochs whose steps were compared in bins of one size; the first after
// a merge is not (every rank decides alike: the bins' shape is reduced).
struct LiveBaseline {
  RankMeasures own;
  std::vector<RankMeasures> ranks;  // by rank; empty but on rank 0
  long epochs = 0;                  // reduced so far
  long steps_per_bin = 0;           // the last reduced epoch's; 0: its steps were not compared

  // Whether this epoch's window can be judged, its steps compared in bins
  // of `steps_per_bin` (0: not compared).
  bool window_known(long steps_per_bin_now) const {
    return steps_per_bin_now > 0 && (epochs == 0 || steps_per_bin == steps_per_bin_now);
  }
  // A summary's measures since the baseline's (its whole job where the
  // baseline has no figures of its rank).
  RankMeasures window_of(const RankSummary& now) const;
  // Rank 0, the epoch reduced: every rank's figures start the next window.
  void keep(std::span<const RankSummary> now, int ranks_total);
};

// The ranks' windows judged as judge_ranks judges the job
// (job_selection.h), each window's figures taken from `now` and the
// baseline as they are read, never copied: 41 MB at 100,000 ranks.
JobJudgement judge_windows(std::span<const RankSummary> now, const LiveBaseline& baseline);

// The windows' late ranks that caused waiting in them, most first (at
// most kWorstRanks), with their main cause there.
std::vector<JobFacts::Live::WindowRank> window_ranks(std::span<const RankSummary> now,
                                                     const LiveBaseline& baseline,
                                                     const JobJudgement& judged);

}  // namespace corenoise
