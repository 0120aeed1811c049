#include "collector/job/model/job_phases.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace corenoise {
namespace {

// The steady state's measures: the whole job's less the warm-up's. The
// clock is the job's (a median, not a sum).
RankMeasures steady_measures(const RankMeasures& whole, const RankMeasures& warmup) {
  RankMeasures rest;
  for (std::size_t i = 0; i < kRankMeasureCount; ++i)
    as_array(rest)[i] = as_array(whole)[i] - as_array(warmup)[i];
  rest.clock_hz = whole.clock_hz;
  rest.off_cpu_seconds = off_cpu(rest);
  // Summed windows may dip below zero (job_session.cpp); each sum was
  // clamped, their difference is too.
  rest.other_processes_seconds = std::max(0.0, rest.other_processes_seconds);
  return rest;
}

JobPhase attribute_phase(std::string name, long first, long last,
                         const std::vector<std::pair<int, RankMeasures>>& ranks) {
  JobPhase phase;
  phase.name = std::move(name);
  phase.first_step = first;
  phase.last_step = last;
  std::vector<RankMeasures> measures;
  for (const auto& [rank, m] : ranks) measures.push_back(m);
  const RankMeasures reference = reference_rank(measures);
  const CauseThresholds threshold = cause_threshold(measures, reference);
  phase.cause_threshold_seconds = threshold.seconds;
  phase.cause_threshold_on_cpu_seconds = threshold.on_cpu_seconds;
  for (const auto& [rank, m] : ranks) {
    phase.wait_seconds += m.wait_seconds;
    const RankAttribution a = attribute(m, reference, threshold);
    if (!is_late(a, m, threshold)) continue;
    phase.wait_caused_seconds += m.wait_caused_seconds;
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    for (std::size_t i = 0; i < kJobCauseCount && explained > 0; ++i)
      phase.causes[i] += m.wait_caused_seconds * a.causes[i] / explained;
    phase.late_ranks.push_back(
        {rank, *a.main_cause, m.wait_caused_seconds, a.causes[index_of(*a.main_cause)]});
  }
  std::stable_sort(phase.late_ranks.begin(), phase.late_ranks.end(),
                   [](const JobPhaseRank& a, const JobPhaseRank& b) {
                     return a.wait_caused_seconds > b.wait_caused_seconds;
                   });
  if (phase.late_ranks.size() > 20) phase.late_ranks.resize(20);
  return phase;
}

}  // namespace

std::vector<JobPhase> job_phases(const std::vector<RankRecord>& records, long warmup_steps,
                                 long steps) {
  if (warmup_steps <= 0 || warmup_steps >= steps || records.empty()) return {};
  std::vector<std::pair<int, RankMeasures>> warmup, steady;
  for (const RankRecord& r : records) {
    // Every rank must have kept its measures at the same step: the steps
    // its snapshot counted.
    if (!r.warmup || r.warmup->steps != static_cast<double>(warmup_steps)) return {};
    warmup.emplace_back(r.rank, *r.warmup);
    steady.emplace_back(r.rank, steady_measures(r.measures, *r.warmup));
  }
  return {attribute_phase("warm-up", 1, warmup_steps, warmup),
          attribute_phase("steady state", warmup_steps + 1, steps, steady)};
}

JobStep step_in_phases(long first_step, long steps, double wait_caused_seconds, int last_rank,
                       std::string call, std::string site, const std::vector<JobPhase>& phases) {
  JobStep step{first_step,      steps, wait_caused_seconds, last_rank, std::move(call),
               std::move(site), "",    std::nullopt};
  for (const JobPhase& phase : phases) {
    if (first_step < phase.first_step || first_step > phase.last_step) continue;
    step.phase = phase.name;
    for (const JobPhaseRank& late : phase.late_ranks) {
      if (late.rank == last_rank) step.cause = late.cause;
    }
  }
  return step;
}

}  // namespace corenoise
