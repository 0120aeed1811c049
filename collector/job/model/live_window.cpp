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

std::vector<RankSummary> LiveBaseline::window_of(std::span<const RankSummary> now) const {
  std::vector<RankSummary> window(now.begin(), now.end());
  for (RankSummary& s : window) {
    const auto rank = static_cast<std::size_t>(s.number());
    if (rank < ranks.size()) s.measures = measures_since(s.measures, ranks[rank]);
    s.warmup = {};
    s.has_warmup = 0;
  }
  return window;
}

void LiveBaseline::keep(std::span<const RankSummary> now, int ranks_total) {
  ranks.resize(static_cast<std::size_t>(std::max(0, ranks_total)));
  for (const RankSummary& s : now) {
    const auto rank = static_cast<std::size_t>(s.number());
    if (rank < ranks.size()) ranks[rank] = s.measures;
  }
}

std::vector<JobFacts::Live::WindowRank> window_ranks(std::span<const RankSummary> window,
                                                     const JobJudgement& judged) {
  std::vector<JobFacts::Live::WindowRank> named;
  for (std::size_t i : worst_ranks(window, judged)) {
    named.push_back({window[i].number(), *judged.late[i], window[i].measures.wait_caused_seconds});
  }
  return named;
}

}  // namespace corenoise
