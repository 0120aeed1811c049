#include "collector/job/model/live_window.h"

#include <algorithm>
#include <cstddef>

namespace corenoise {

RankMeasures measures_since(const RankMeasures& now, const RankMeasures& before) {
  RankMeasures window;
  const double* later = as_array(now);
  const double* earlier = as_array(before);
  double* out = as_array(window);
  for (std::size_t i = 0; i < kRankMeasureCount; ++i) out[i] = std::max(0.0, later[i] - earlier[i]);
  window.clock_hz = now.clock_hz;
  return window;
}

RankMeasures LiveBaseline::window_of(const RankSummary& now) const {
  const auto rank = static_cast<std::size_t>(now.number());
  return rank < ranks.size() ? measures_since(now.measures, ranks[rank]) : now.measures;
}

void LiveBaseline::keep(std::span<const RankSummary> now, int ranks_total) {
  ranks.resize(static_cast<std::size_t>(std::max(0, ranks_total)));
  for (const RankSummary& s : now) {
    const auto rank = static_cast<std::size_t>(s.number());
    if (rank < ranks.size()) ranks[rank] = s.measures;
  }
}

JobJudgement judge_windows(std::span<const RankSummary> now, const LiveBaseline& baseline) {
  constexpr std::size_t kClock = offsetof(RankMeasures, clock_hz) / sizeof(double);
  JobJudgement judged;
  const MeasureFields fields{now.size(), [&](std::size_t i, std::size_t field) {
                               const double later = as_array(now[i].measures)[field];
                               const auto rank = static_cast<std::size_t>(now[i].number());
                               if (field == kClock || rank >= baseline.ranks.size()) return later;
                               return std::max(0.0, later - as_array(baseline.ranks[rank])[field]);
                             }};
  judged.reference = reference_rank(fields);
  judged.threshold = cause_threshold(fields, judged.reference);
  judged.late.reserve(now.size());
  for (const RankSummary& s : now)
    judged.late.push_back(judged.attribution_of(baseline.window_of(s)).main_cause);
  return judged;
}

std::vector<JobFacts::Live::WindowRank> window_ranks(std::span<const RankSummary> now,
                                                     const LiveBaseline& baseline,
                                                     const JobJudgement& judged) {
  std::vector<JobFacts::Live::WindowRank> late;
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (!judged.late[i]) continue;
    const double caused = baseline.window_of(now[i]).wait_caused_seconds;
    if (caused > 0) late.push_back({now[i].number(), *judged.late[i], caused});
  }
  const auto more_caused = [](const auto& a, const auto& b) {
    return a.wait_caused_seconds > b.wait_caused_seconds ||
           (a.wait_caused_seconds == b.wait_caused_seconds && a.rank < b.rank);
  };
  const std::size_t shown = std::min(kWorstRanks, late.size());
  std::partial_sort(late.begin(), late.begin() + static_cast<std::ptrdiff_t>(shown), late.end(),
                    more_caused);
  late.resize(shown);
  return late;
}

}  // namespace corenoise
