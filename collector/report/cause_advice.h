// The causes of daemon/control/job_causes.h (the one vocabulary of the profiler,
// the `job` control command and corenoise_job_lost_seconds_total) in
// words, and the fix that fits each (docs/guide.md, "Inside the job"), for
// the banner and the report: a job view's words, kept out of the model
// (job/model/ names a cause by its JobCause only).
#pragma once

#include <string_view>

#include "daemon/control/job_causes.h"

namespace corenoise {

// What fixes it, in a sentence.
std::string_view cause_advice(JobCause cause);
// The cause in words: "waited for its CPU behind its own threads".
std::string_view cause_words(JobCause cause);

}  // namespace corenoise
