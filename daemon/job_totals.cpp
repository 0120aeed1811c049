#include "daemon/job_totals.h"

namespace corenoise {

double JobTotals::add(const JobRequest& report) {
  double added = 0;
  for (const JobCpuLoss& loss : report.cpus) {
    JobLostSeconds& totals = lost_seconds[loss.cpu];  // zeros when new
    for (std::size_t i = 0; i < kJobCauseCount; ++i) {
      totals[i] += loss.lost_seconds[i];
      added += loss.lost_seconds[i];
    }
  }
  ++reports;
  // The latest to arrive, not the latest to end: reports come as jobs end,
  // and the gauge says when this node last heard from a job.
  last_ended_unix_seconds = report.ended_unix_seconds;
  return added;
}

}  // namespace corenoise
