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
  // A device's IRQ (numbered; LOC, RES and the softirqs have no affinity
  // of their own to move).
  const auto irq =
      std::find_if(rank.culprits.begin(), rank.culprits.end(), [](const JobCulprit& c) {
        return c.kind == JobCulprit::Kind::irq && !c.line.empty() &&
               std::all_of(c.line.begin(), c.line.end(),
                           [](char ch) { return ch >= '0' && ch <= '9'; });
      });
  if (cause == JobCause::interrupts && irq != rank.culprits.end()) {
    advice += "; IRQ " + irq->line + " first (/proc/irq/" + irq->line + "/smp_affinity_list)";
  }
  return advice;
}

}  // namespace corenoise
