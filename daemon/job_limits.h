// What one user's jobs may hold of corenoised: the limits job admission
// (daemon/job_admission.h) enforces, apart so that the configuration can
// name them without the admission's dependencies. Plain data.
#pragma once

#include <cstddef>

namespace corenoise {

struct JobAdmissionLimits {
  std::size_t ranks_per_user = 1024;  // live registrations of one uid
  std::size_t ranks_total = 8192;     // of all users (each holds a pidfd)
  double lines_per_second = 200;      // job-start and job lines of one uid, sustained
  double line_burst = 400;            // ... and in a burst
};

}  // namespace corenoise
