// The causes `corenoise job` names for the time a CPU lost while a job ran
// (docs/control.md, `job`; docs/metrics.md, the `cause` label of
// corenoise_job_lost_seconds_total). One vocabulary for the profiler that
// measures, the protocol that carries and the exporter that serves it, so
// a cause cannot be spelt two ways. Header-only and constexpr: the PMPI
// library includes it without linking the daemon.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace corenoise {

enum class JobCause {
  own_threads,      // the rank waited for its CPU behind the job's own threads
  other_processes,  // ... behind other processes
  interrupts,       // its CPU served interrupts (hard and soft)
  steal,            // the hypervisor took the vCPU
  page_faults,      // it faulted pages in
  slower_clock,     // it ran at a slower clock
  more_work,        // it ran longer at the same clock: more work, or slower memory
};

// Every cause, in the order of the docs; JobCause's value is its index.
inline constexpr JobCause kJobCauses[] = {
    JobCause::own_threads, JobCause::other_processes, JobCause::interrupts, JobCause::steal,
    JobCause::page_faults, JobCause::slower_clock,    JobCause::more_work,
};
inline constexpr std::size_t kJobCauseCount = std::size(kJobCauses);

// Seconds lost by cause, indexed by JobCause (0 where a cause was not reported).
using JobLostSeconds = std::array<double, kJobCauseCount>;

constexpr std::size_t index_of(JobCause cause) { return static_cast<std::size_t>(cause); }

static_assert([] {
  for (std::size_t i = 0; i < kJobCauseCount; ++i) {
    if (index_of(kJobCauses[i]) != i) return false;
  }
  return true;
}());

// The wire name, also the `cause` label: "own-threads", ...
constexpr std::string_view to_string(JobCause cause) {
  switch (cause) {
    case JobCause::own_threads:
      return "own-threads";
    case JobCause::other_processes:
      return "other-processes";
    case JobCause::interrupts:
      return "interrupts";
    case JobCause::steal:
      return "steal";
    case JobCause::page_faults:
      return "page-faults";
    case JobCause::slower_clock:
      return "slower-clock";
    case JobCause::more_work:
      return "more-work";
  }
  return "?";
}

// The cause spelt `name` exactly, or nullopt.
constexpr std::optional<JobCause> job_cause_named(std::string_view name) {
  for (JobCause cause : kJobCauses) {
    if (to_string(cause) == name) return cause;
  }
  return std::nullopt;
}

}  // namespace corenoise
