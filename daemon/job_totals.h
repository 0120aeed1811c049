// What jobs reported to this node (the control socket's `job`), summed
// since the daemon started: the state behind corenoise_job_* on /metrics
// (the refused lines are counted beside the snapshot: LiveCounters).
// A plain value, copied into each Snapshot; not thread-safe by itself
// (the daemon changes it on its event-loop thread only).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "daemon/control/control_requests.h"
#include "daemon/control/job_causes.h"
#include "daemon/job_admission.h"

namespace corenoise {

struct JobTotals {
  std::uint64_t reports = 0;                      // reports accepted
  std::optional<double> last_ended_unix_seconds;  // ended_unix_seconds of the latest accepted
  // By cpu, seconds lost by cause over every report. Only CPUs a report
  // named have an entry (the handler accepts only this node's CPUs, so
  // this holds at most one entry per PU).
  std::map<unsigned, JobLostSeconds> lost_seconds;

  // Counts `report` (already validated: the protocol's bounds, this node's
  // CPUs, JobAdmission). Returns the CPU-seconds it added.
  double add(const JobRequest& report);
};

}  // namespace corenoise
