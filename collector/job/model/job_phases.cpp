#include "collector/job/model/job_phases.h"

#include <algorithm>
#include <functional>
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

// `phase_fields.field(i, f)` is field f of the phase's measures of the
// rank of `all[i]`, and `measures_of(all[i])` all of them.
JobPhase attribute_phase(std::string name, long first, long last, std::span<const RankSummary> all,
                         const MeasureFields& phase_fields,
                         const std::function<RankMeasures(const RankSummary&)>& measures_of) {
  JobPhase phase;
  phase.name = std::move(name);
  phase.first_step = first;
  phase.last_step = last;
  const RankMeasures reference = reference_rank(phase_fields);
  const CauseThresholds threshold = cause_threshold(phase_fields, reference);
  phase.cause_threshold_seconds = threshold.seconds;
  phase.cause_threshold_on_cpu_seconds = threshold.on_cpu_seconds;
  for (const RankSummary& s : all) {
    const RankMeasures m = measures_of(s);
    phase.wait_seconds += m.wait_seconds;
    const RankAttribution a = attribute(m, reference, threshold);
    if (!is_late(a, m, threshold)) continue;
    phase.wait_caused_seconds += m.wait_caused_seconds;
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    for (std::size_t k = 0; k < kJobCauseCount && explained > 0; ++k)
      phase.causes[k] += m.wait_caused_seconds * a.causes[k] / explained;
    phase.late_ranks.push_back(
        {s.number(), *a.main_cause, m.wait_caused_seconds, a.causes[index_of(*a.main_cause)]});
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
  // Read off the summaries a field at a time, not copied: at 100,000
  // ranks a phase's measures are 19 MB.
  const MeasureFields warmup_fields{all.size(), [all](std::size_t rank, std::size_t field) {
                                      return as_array(all[rank].warmup)[field];
                                    }};
  // A field of the steady state's measures made whole for each read: 60 ms
  // at 100,000 ranks, where a copy would take 19 MB.
  const MeasureFields steady_fields{all.size(), [all](std::size_t rank, std::size_t field) {
                                      const RankSummary& s = all[rank];
                                      return as_array(steady_measures(s.measures, s.warmup))[field];
                                    }};
  std::vector<JobPhase> phases;
  phases.push_back(attribute_phase("warm-up", 1, warmup_steps, all, warmup_fields,
                                   [](const RankSummary& s) { return s.warmup; }));
  phases.push_back(
      attribute_phase("steady state", warmup_steps + 1, steps, all, steady_fields,
                      [](const RankSummary& s) { return steady_measures(s.measures, s.warmup); }));
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
