// What `corenoise job` costs a rank, measured on the library's own code
// without MPI: the bookkeeping of one blocking call (JobSession::enter and
// exit: two monotonic clock reads and the interval sums; the thread's CPU
// clock only after intervals of 50 us or more, timed apart) and one sample (the /proc
// re-reads and the clock chain), each the median of many. With a job's
// calls per step and the sampling cadence this gives the overhead at any
// step length; job_overhead_bench.py measures the same side by side in real
// jobs. Prints figures; never fails on a timing.
//
//   job_call_cost_bench [CALLS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collector/job/rank/job_session.h"

using corenoise::JobOptions;
using corenoise::JobSession;
using corenoise::monotonic_seconds;
using corenoise::MpiCall;

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  JobOptions options;
  options.max_interval_seconds = 1e6;  // no sampling inside the call loop
  options.min_interval_seconds = 1e6;
  JobSession session(options);

  std::vector<double> per_call;
  for (int batch = 0; batch < 21; ++batch) {
    const double t0 = monotonic_seconds();
    for (long i = 0; i < calls / 21; ++i) {
      session.enter();
      session.exit(MpiCall::Allreduce, 0x1234, true);
    }
    per_call.push_back((monotonic_seconds() - t0) / static_cast<double>(calls / 21));
  }
  std::nth_element(per_call.begin(), per_call.begin() + 10, per_call.end());
  const double call = per_call[10];

  // The thread's CPU clock, read at the ends of intervals of at least
  // IntervalRecorder::kUnreadInterval only (a system call).
  std::vector<double> per_read;
  for (int batch = 0; batch < 21; ++batch) {
    const double t0 = monotonic_seconds();
    double sink = 0;
    for (int i = 0; i < 10000; ++i) sink += corenoise::thread_cpu_seconds();
    per_read.push_back((monotonic_seconds() - t0) / 10000 + (sink < 0 ? 1 : 0));
  }
  std::nth_element(per_read.begin(), per_read.begin() + 10, per_read.end());
  const double cpu_read = per_read[10];

  // A sample as the session takes one: enter() once the next sample is due.
  JobOptions sampling;
  sampling.min_interval_seconds = 0;
  sampling.max_interval_seconds = 0;
  sampling.budget = 1;  // due at every call
  JobSession sampled(sampling);
  std::vector<double> per_sample;
  for (int i = 0; i < 201; ++i) {
    const double t0 = monotonic_seconds();
    sampled.enter();
    sampled.exit(MpiCall::Barrier, 0x1234, true);
    per_sample.push_back(monotonic_seconds() - t0 - call);
  }
  std::nth_element(per_sample.begin(), per_sample.begin() + 100, per_sample.end());
  const double sample = per_sample[100];
  const double budget = JobOptions{}.budget;
  const double cadence = std::clamp(sample / budget, JobOptions{}.min_interval_seconds,
                                    JobOptions{}.max_interval_seconds);

  std::printf("per blocking call (enter+exit): median %.0f ns over %ld calls\n", call * 1e9, calls);
  std::printf(
      "the thread's CPU clock: %.0f ns a reading, taken at the end of intervals of %.0f us or "
      "more only: at most %.2f %% of them\n",
      cpu_read * 1e9, corenoise::IntervalRecorder::kUnreadInterval * 1e6,
      cpu_read / corenoise::IntervalRecorder::kUnreadInterval * 100);
  std::printf("per sample (/proc, /proc/stat, clock chain): median %.1f us (%s clock)\n",
              sample * 1e6, std::string(sampled.clock_source()).c_str());
  std::printf("sampling cadence at the default budget (%.2f %%): every %.0f ms\n", budget * 100,
              cadence * 1e3);
  for (const double step : {0.001, 0.030}) {
    // The story's step: one barrier and one allreduce, each interval long
    // enough for its CPU time to be read (at most two readings a call).
    const double calls_cost = 2 * (call + 2 * cpu_read);
    const double share = calls_cost / step + sample / cadence;
    std::printf("step %4.0f ms, 2 calls per step: %.3f %% (calls %.3f %%, sampling %.3f %%)\n",
                step * 1e3, share * 100, calls_cost / step * 100, sample / cadence * 100);
  }
  return 0;
}
