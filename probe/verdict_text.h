// The sentences of a core's verdict: why a judged core has its state,
// made from its figures and CoreFigures::Why, the judgement itself being
// analysis.*'s. A view at the bottom of the layers, beside report_json.*,
// so that the probe table, the sweep and the daemon's log say the same.
#pragma once

#include <string>

#include "probe/analysis.h"

namespace corenoise {

// One line for a throttled, noisy, contended or slow core ("clock 2.40 GHz
// is 20.0% below the default reference 3.00 GHz (95% interval …)"); empty
// for any other state.
std::string cause_text(const CoreFigures& core);

// Where a core's lost time went: from the tracer's named culprits where it
// traced ("62% preempted by stress-ng[1234] (40 times), …"), else as far
// as the kernel's counters tell.
std::string lost_time_text(const DetourResult& detours,
                           const std::optional<trace::Attribution>& culprits);

}  // namespace corenoise
