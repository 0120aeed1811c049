// What `corenoise job` costs a rank, measured on the library's own code
// without MPI: the bookkeeping of one blocking call (JobSession::enter and
// exit: two readings of the call clock, call_clock.h, and the interval sums; the thread's CPU
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
#include <string>
#include <vector>

#include "collector/job/rank/job_session.h"

using corenoise::JobOptions;
using corenoise::JobSession;
using corenoise::monotonic_seconds;
using corenoise::MpiCall;

namespace {

// The median cost of one blocking call's bookkeeping, after 0.3 s of
// calls: long enough for the session's samples (every 15 ms here, 10 µs
// each: 0.07 % of the figure) to give its call clock a rate.
double per_call_seconds(const std::string& sys_root, long calls, bool& tsc) {
  JobOptions options;
  options.sys_root = sys_root;
  options.min_interval_seconds = options.max_interval_seconds = 0.015;
  JobSession session(options);
  for (const double until = monotonic_seconds() + 0.3; monotonic_seconds() < until;) {
    session.enter();
    session.exit(MpiCall::Allreduce, 0x1234, true);
  }
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
  tsc = session.uses_tsc();
  return per_call[10];
}

}  // namespace

// One reading of a clock, the median of 21 batches of 100,000.
template <typename Read>
double per_reading_seconds(Read&& read) {
  std::vector<double> per;
  for (int batch = 0; batch < 21; ++batch) {
    const double t0 = monotonic_seconds();
    double sink = 0;
    for (int i = 0; i < 100000; ++i) sink += static_cast<double>(read());
    per.push_back((monotonic_seconds() - t0) / 100000 + (sink < 0 ? 1 : 0));
  }
  std::nth_element(per.begin(), per.begin() + 10, per.end());
  return per[10];
}

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  // The call clock by clock_gettime (a /sys without a clocksource), then
  // as the library reads it here (call_clock.h).
  bool tsc = false;
  const double call_gettime = per_call_seconds("/nonexistent", calls, tsc);
  const double call = per_call_seconds("/sys", calls, tsc);

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

  std::printf("per blocking call (enter+exit): median %.0f ns over %ld calls, the call clock %s\n",
              call * 1e9, calls,
              tsc ? "by the TSC" : "by clock_gettime (the kernel's clocksource is not tsc)");
  std::printf("per blocking call, the call clock by clock_gettime: median %.0f ns\n",
              call_gettime * 1e9);
  std::printf("one reading: clock_gettime(CLOCK_MONOTONIC) %.1f ns, the TSC (rdtsc) %.1f ns\n",
              per_reading_seconds(monotonic_seconds) * 1e9,
              per_reading_seconds(corenoise::read_tsc) * 1e9);
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
