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

// `measures[i]` is the phase's of the rank of `all[i]`.
JobPhase attribute_phase(std::string name, long first, long last, std::span<const RankSummary> all,
                         const std::vector<RankMeasures>& measures) {
  JobPhase phase;
  phase.name = std::move(name);
  phase.first_step = first;
  phase.last_step = last;
  const RankMeasures reference = reference_rank(measures);
  const CauseThresholds threshold = cause_threshold(measures, reference);
  phase.cause_threshold_seconds = threshold.seconds;
  phase.cause_threshold_on_cpu_seconds = threshold.on_cpu_seconds;
  for (std::size_t i = 0; i < measures.size(); ++i) {
    const RankMeasures& m = measures[i];
    phase.wait_seconds += m.wait_seconds;
    const RankAttribution a = attribute(m, reference, threshold);
    if (!is_late(a, m, threshold)) continue;
    phase.wait_caused_seconds += m.wait_caused_seconds;
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    for (std::size_t k = 0; k < kJobCauseCount && explained > 0; ++k)
      phase.causes[k] += m.wait_caused_seconds * a.causes[k] / explained;
    phase.late_ranks.push_back(
        {all[i].number(), *a.main_cause, m.wait_caused_seconds, a.causes[index_of(*a.main_cause)]});
  }
  std::stable_sort(phase.late_ranks.begin(), phase.late_ranks.end(),
                   [](const JobPhaseRank& a, const JobPhaseRank& b) {
                     return a.wait_caused_seconds > b.wait_caused_seconds;
                   });
  if (phase.late_ranks.size() > 20) phase.late_ranks.resize(20);
  return phase;
}

}  // namespace

std::vector<JobPhase> job_phases(std::span<const RankSummary> all, long warmup_steps, long steps) {
  if (warmup_steps <= 0 || warmup_steps >= steps || all.empty()) return {};
  // Every rank must have kept its measures at the same step: the steps
  // its snapshot counted.
  for (const RankSummary& s : all) {
    if (s.has_warmup != 1 || s.warmup.steps != static_cast<double>(warmup_steps)) return {};
  }
  // One phase's measures at a time: at 100,000 ranks each is 19 MB.
  std::vector<RankMeasures> measures;
  measures.reserve(all.size());
  for (const RankSummary& s : all) measures.push_back(s.warmup);
  std::vector<JobPhase> phases{attribute_phase("warm-up", 1, warmup_steps, all, measures)};
  measures.clear();
  for (const RankSummary& s : all) measures.push_back(steady_measures(s.measures, s.warmup));
  phases.push_back(attribute_phase("steady state", warmup_steps + 1, steps, all, measures));
  return phases;
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
