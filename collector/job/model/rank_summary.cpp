#include "collector/job/model/rank_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace corenoise {

RankSummary summary_of(const RankRecord& record, int node) {
  RankSummary s;
  s.measures = record.measures;
  if (record.warmup) {
    s.warmup = *record.warmup;
    s.has_warmup = 1;
  }
  s.rank = record.rank;
  s.node = node;
  return s;
}

std::vector<RankSummary> summaries_of(const std::vector<RankRecord>& records) {
  std::map<std::string, int> first_of_host;
  for (const RankRecord& r : records) {
    auto [it, added] = first_of_host.emplace(r.host, r.rank);
    if (!added) it->second = std::min(it->second, r.rank);
  }
  std::vector<RankSummary> summaries;
  summaries.reserve(records.size());
  for (const RankRecord& r : records) summaries.push_back(summary_of(r, first_of_host[r.host]));
  return summaries;
}

bool sound(const RankSummary& s, int ranks) {
  const double* figures = as_array(s);
  if (!std::all_of(figures, figures + kRankSummaryDoubles,
                   [](double x) { return std::isfinite(x); }))
    return false;
  const auto is_rank = [ranks](double x) { return x >= 0 && x < ranks && x == std::floor(x); };
  return is_rank(s.rank) && is_rank(s.node) && (s.has_warmup == 0 || s.has_warmup == 1);
}

}  // namespace corenoise
