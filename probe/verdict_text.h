// The sentences of a core's verdict, made from its Cause (probe/cause.h):
// the judgement and the figures are the models'; the words are only here.
// A view at the bottom of the layers, beside report_json.*, so that the
// probe table, the sweep, `corenoise status` and the daemon's log say the
// same.
#pragma once

#include <string>

#include "probe/cause.h"

namespace corenoise {

// The whole cause: the state's sentence ("clock 2.40 GHz is 20.0% below
// the default reference 3.00 GHz (95% interval …)"), with what the
// confirmation, the thermal counters and the daemon's persistence added;
// for a skipped CPU why it was not measured; empty for a core with nothing
// to say.
std::string cause_text(const Cause& cause);

// The state's sentence alone: what the round suspected, before any
// confirmation, thermal counter or persistence said more.
std::string suspected_cause_text(const Cause& cause);

// Where a core's lost time went: from the tracer's named culprits where it
// traced ("62% preempted by stress-ng[1234] (40 times), …"), else as far
// as the kernel's counters tell.
std::string lost_time_text(const LostTime& lost);

}  // namespace corenoise
