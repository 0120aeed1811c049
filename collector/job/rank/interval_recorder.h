// The per-call bookkeeping of one rank (the thread that called MPI_Init):
// every blocking MPI call closes a compute interval and opens a wait. It
// keeps totals, a table of call sites, and every step's wait, where a step
// is a blocking collective on a communicator spanning the whole job: the
// k-th such call is the same collective on every rank (MPI orders them), so
// the ranks' k-th waits can be compared at MPI_Finalize (job_reduction).
//
// The per-call path allocates nothing: the call-site table and the step
// bins are reserved up front. Past kMaxStepBins steps the bins merge in
// pairs (each then holds 2, 4, ... steps, summed), so memory stays bounded
// on a job of millions of steps while lateness stays comparable across
// ranks: every rank merges at the same step count.
//
// Pure: times come in as arguments (seconds on CLOCK_MONOTONIC and the
// thread's CPU clock), so tests drive it without MPI or a clock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collector/job/model/spill_layout.h"
#include "collector/job/rank/mpi_calls.h"

namespace corenoise {

// One call site: which call, from which return address.
struct CallSite {
  MpiCall call = MpiCall::count;
  std::uintptr_t return_address = 0;
  std::uint64_t calls = 0;
  double wait_seconds = 0;
  double wait_max_seconds = 0;
  // Where the rank is Python (python_caller.h): the lines that made this
  // site's calls, as sampled at its calls 1, 2, 4, 8, ... and at each new
  // longest wait; the first kPythonLines distinct ones, with their samples.
  static constexpr std::size_t kPythonLines = 3;
  struct PythonLine {
    std::array<char, 88> text{};  // "story.py:74 in main"; empty: unused
    std::uint32_t samples = 0;
  };
  std::array<PythonLine, kPythonLines> python{};
  std::uint64_t next_python_sample = 1;  // the call count at which to sample next
};

class StepWaits {
 public:
  explicit StepWaits(std::size_t max_bins);
  // `site`: the call site's tag (IntervalRecorder::site_at); `now`: the
  // call clock when the step ended.
  void add(double wait_seconds, std::uint16_t site = 0, double now = 0);
  std::uint64_t steps() const { return steps_; }
  std::uint64_t steps_per_bin() const { return steps_per_bin_; }
  // Bins of steps_per_bin() steps each (the last may hold fewer), summed.
  const std::vector<double>& bins() const { return bins_; }
  // The call site of each bin's first step (a tag of site_at).
  const std::vector<std::uint16_t>& sites() const { return sites_; }
  // The call clock when each bin's last step ended: where a report puts
  // its steps in time (lateness_pattern.h).
  const std::vector<double>& ends() const { return ends_; }
  // Also keeps every bin in `bins` (room for max_bins) and {steps,
  // steps_per_bin, bins used} in `counts` as they change: a spill file's
  // mapping (spill_writer.h), which outlives a killed process.
  void mirror_to(double* bins, std::uint64_t* counts);
  // A copy that mirrors nowhere: the spill file is the live one's.
  StepWaits unmirrored() const {
    StepWaits copy = *this;
    copy.mirror_ = nullptr;
    copy.mirror_counts_ = nullptr;
    return copy;
  }

 private:
  void mirror_counts();
  std::size_t max_bins_;
  double* mirror_ = nullptr;
  std::uint64_t* mirror_counts_ = nullptr;
  std::uint64_t steps_ = 0;
  std::uint64_t steps_per_bin_ = 1;
  std::vector<double> bins_;
  std::vector<std::uint16_t> sites_;
  std::vector<double> ends_;
};

struct IntervalTotals {
  double compute_seconds = 0;        // wall time between blocking calls
  double compute_cpu_seconds = 0;    // the thread's CPU time in those intervals
  double wait_seconds = 0;           // wall time inside blocking calls
  double wait_cpu_seconds = 0;       // the thread's CPU time in them
  double exchange_wait_seconds = 0;  // of wait_seconds, in point-to-point calls (mpi_calls.h)
  std::uint64_t calls = 0;
};

class IntervalRecorder {
 public:
  static constexpr std::size_t kMaxCallSites = 256;
  static constexpr std::size_t kMaxStepBins = corenoise::kMaxStepBins;  // spill_layout.h

  // An interval shorter than this is counted on its CPU without reading
  // the thread's CPU clock, a system call (~170 ns here) that would double
  // the cost of a fast collective. Its time off the CPU, at most its
  // length, shows at the next reading: in the interval read, up to that
  // one's own wall time, and beyond it taken back from the intervals not
  // read, in proportion; the CPU time between two readings is theirs and
  // the read interval's, never more or less. Reading at the end of each
  // interval at least this long costs at most 0.34 % of it.
  static constexpr double kUnreadInterval = 50e-6;
  // The `thread_cpu` of an interval not read (wants_cpu() was false).
  static constexpr double kCpuNotRead = -1;

  // `now` and `thread_cpu` at MPI_Init's return: the first compute interval
  // starts there.
  IntervalRecorder(double now, double thread_cpu, std::size_t max_step_bins = kMaxStepBins);

  // Whether the interval open at `now` is long enough for its CPU time to
  // be read (kUnreadInterval); else enter() or exit() take kCpuNotRead.
  bool wants_cpu(double now) const { return now - interval_start_ >= kUnreadInterval; }
  // At a blocking call's entry: closes the compute interval.
  void enter(double now, double thread_cpu);
  // At its exit. `step`: a collective over the whole job. Returns the
  // call's wait (seconds), which an exchange charges to its peers.
  double exit(double now, double thread_cpu, MpiCall call, std::uintptr_t return_address,
              bool step);
  // Time the library spent on itself (sampling) between enter and exit,
  // wall and CPU, excluded from the wait and from its time on the CPU.
  void exclude(double seconds, double cpu_seconds) {
    excluded_ += seconds;
    excluded_cpu_ += cpu_seconds;
  }
  void exclude(double seconds) { exclude(seconds, seconds); }

  // Python call sites (python_caller.h): once on, the site of an exit whose
  // caller is due to be sampled is offered by wants_caller() until the
  // next exit; the caller's text goes to add_caller, and the time taken to
  // find it to exclude_from_compute (it is neither the call's nor the
  // program's).
  void sample_callers(bool on) { sample_callers_ = on; }
  CallSite* wants_caller() const { return wants_caller_; }
  void add_caller(CallSite& site, const char* text);
  void exclude_from_compute(double seconds, double cpu_seconds) {
    interval_start_ += seconds;
    interval_start_cpu_ += cpu_seconds;
  }

  const IntervalTotals& totals() const { return totals_; }
  // Compute seconds so far, including the open interval up to `now` when no
  // call is in progress (a window's share, proc_sampler).
  double compute_seconds_at(double now) const;
  const StepWaits& step_waits() const { return steps_; }
  StepWaits& step_waits() { return steps_; }
  // The site a step's tag names (StepWaits::sites); nullptr for none.
  const CallSite* site_at(std::uint16_t tag) const;
  // A copy of the figures so far that records nothing more (frozen_session.h).
  IntervalRecorder frozen() const {
    IntervalRecorder copy = *this;
    copy.steps_ = steps_.unmirrored();
    copy.wants_caller_ = nullptr;
    return copy;
  }
  // The sites seen, in first-call order. Sites past kMaxCallSites are
  // counted in one entry per call with return_address 0.
  std::vector<CallSite> call_sites() const;

 private:
  CallSite& site(MpiCall call, std::uintptr_t return_address);

  IntervalTotals totals_;
  StepWaits steps_;
  bool sample_callers_ = false;
  CallSite* wants_caller_ = nullptr;
  double interval_start_ = 0;      // wall time the current interval began
  double interval_start_cpu_ = 0;  // and the thread's CPU time then
  double excluded_ = 0;
  double excluded_cpu_ = 0;
  bool in_call_ = false;
  // CPU time the intervals not read since the last reading were counted
  // with (their wall time), computing and waiting.
  double assumed_compute_cpu_ = 0, assumed_wait_cpu_ = 0;
  // The CPU time of an interval of `wall` seconds whose CPU clock stood at
  // `since` when it began (the last reading, or the estimate after
  // intervals not read); moves interval_start_cpu_ on.
  double cpu_of(double thread_cpu, double since, double wall, double& assumed);
  // Open addressing on the return address; slot order is hash order, so
  // the first-call order is kept separately. Twice kMaxCallSites slots: the
  // table holds kMaxCallSites sites, as documented above, and is then half
  // full, which keeps the probes short (it used to stop at 3/4 of
  // kMaxCallSites slots, 192 sites).
  static constexpr std::size_t kTableSlots = 2 * kMaxCallSites;
  std::array<CallSite, kTableSlots> sites_{};
  std::array<std::uint16_t, kMaxCallSites> order_{};
  std::size_t used_ = 0;
  std::array<CallSite, static_cast<std::size_t>(MpiCall::count)> overflow_{};
};

}  // namespace corenoise
