#include "collector/job/model/job_selection.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace corenoise {

RankAttribution JobJudgement::attribution_of(const RankMeasures& measures) const {
  RankAttribution a = attribute(measures, reference, threshold);
  if (!is_late(a, measures, threshold)) a.main_cause.reset();
  return a;
}

JobJudgement judge_ranks(std::span<const RankSummary> all) {
  JobJudgement judged;
  const MeasureFields fields{all.size(), [all](std::size_t rank, std::size_t field) {
                               return as_array(all[rank].measures)[field];
                             }};
  judged.reference = reference_rank(fields);
  judged.threshold = cause_threshold(fields, judged.reference);
  judged.late.reserve(all.size());
  for (const RankSummary& s : all)
    judged.late.push_back(judged.attribution_of(s.measures).main_cause);
  return judged;
}

std::vector<std::size_t> worst_ranks(std::span<const RankSummary> all, const JobJudgement& judged) {
  std::vector<std::size_t> late;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (judged.late[i] && all[i].measures.wait_caused_seconds > 0) late.push_back(i);
  }
  const auto more_caused = [&](std::size_t a, std::size_t b) {
    const double ca = all[a].measures.wait_caused_seconds, cb = all[b].measures.wait_caused_seconds;
    return ca > cb || (ca == cb && a < b);
  };
  const std::size_t shown = std::min(kWorstRanks, late.size());
  std::partial_sort(late.begin(), late.begin() + static_cast<std::ptrdiff_t>(shown), late.end(),
                    more_caused);
  late.resize(shown);
  return late;
}

std::vector<int> ranks_in_full(std::span<const RankSummary> all, const JobJudgement& judged,
                               std::size_t full, std::span<const int> asked) {
  std::set<int> wanted;
  if (all.size() <= full) {
    for (const RankSummary& s : all) wanted.insert(s.number());
    return {wanted.begin(), wanted.end()};
  }
  for (std::size_t i : worst_ranks(all, judged)) wanted.insert(all[i].number());
  // Each node's rank that caused the most waiting there.
  std::map<int, std::size_t> worst_of_node;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto [it, added] = worst_of_node.emplace(all[i].node_rank(), i);
    if (all[i].measures.wait_caused_seconds > all[it->second].measures.wait_caused_seconds)
      it->second = i;
  }
  for (const auto& [node, i] : worst_of_node) {
    if (all[i].measures.wait_caused_seconds > 0) wanted.insert(all[i].number());
  }
  wanted.insert(asked.begin(), asked.end());
  // Only ranks that reported.
  std::vector<int> reported;
  reported.reserve(all.size());
  for (const RankSummary& s : all) reported.push_back(s.number());
  std::sort(reported.begin(), reported.end());
  std::vector<int> out;
  std::set_intersection(wanted.begin(), wanted.end(), reported.begin(), reported.end(),
                        std::back_inserter(out));
  return out;
}

}  // namespace corenoise
