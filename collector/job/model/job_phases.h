// The job in two phases: its warm-up (the steps before the step times
// settle: a JIT's compile, first-touch faults, one rank's extra set-up)
// and its steady state, each attributed as the whole job is
// (attribution.h), against its own reference rank and threshold, so that a
// compile-time skew is neither hidden in the job's totals nor read as the
// steady state's noise. And the steps that caused the most waiting, each
// with the last rank to arrive and that rank's cause in its phase.
//
// Pure, like job_report.h.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collector/job/model/attribution.h"
#include "collector/job/model/rank_summary.h"

namespace corenoise {

struct JobPhaseRank {
  int rank = 0;
  JobCause cause = JobCause::more_work;
  double wait_caused_seconds = 0;
  double cause_seconds = 0;  // of its main cause, in the phase
};

struct JobPhase {
  std::string name;  // "warm-up" or "steady state"
  long first_step = 0, last_step = 0;
  double wait_seconds = 0;                                                 // summed over ranks
  double wait_caused_seconds = 0;                                          // by late ranks
  double cause_threshold_seconds = 0, cause_threshold_on_cpu_seconds = 0;  // (cause_threshold)
  std::array<double, kJobCauseCount> causes{};  // the waiting the late ranks caused
  std::vector<JobPhaseRank> late_ranks;         // most waiting caused first; at most 20
};

struct JobStep {
  long first_step = 0, steps = 1;
  double wait_caused_seconds = 0;
  int last_rank = 0;
  std::string call, site;
  std::string phase;              // the phase it fell in; empty: not split
  std::optional<JobCause> cause;  // the last rank's in that phase, if it was late there
};

// The warm-up and the steady state; empty unless the job was split
// (`warmup_steps` > 0) and every rank's summary carries its warm-up
// measures.
std::vector<JobPhase> job_phases(std::span<const RankSummary> all, long warmup_steps, long steps);

// A step of the worst (job_report.h's facts) with its phase and cause.
JobStep step_in_phases(long first_step, long steps, double wait_caused_seconds, int last_rank,
                       std::string call, std::string site, const std::vector<JobPhase>& phases);

}  // namespace corenoise
