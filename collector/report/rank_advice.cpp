#include "collector/report/rank_advice.h"

#include <algorithm>

#include "collector/report/cause_advice.h"

namespace corenoise {

std::string rank_advice(const JobRank& rank) {
  const JobCause cause = *rank.attribution.main_cause;
  std::string advice(cause_advice(cause));
  const bool names_a_process =
      std::any_of(rank.culprits.begin(), rank.culprits.end(),
                  [](const JobCulprit& c) { return c.kind == JobCulprit::Kind::process; });
  if (cause == JobCause::other_processes && names_a_process) {
    advice += "; find the process named here";
  }
  return advice;
}

}  // namespace corenoise
