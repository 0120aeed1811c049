// One rank's measurement, from MPI_Init's return to MPI_Finalize: the
// interval recorder on every blocking call, and at the sampling cadence
// the /proc sampler and the clock. MPI-free (pmpi_wrappers.cpp and
// job_reduction.cpp, compiled per family, hold the MPI side), so tests
// drive a session without MPI.
//
// The cadence keeps the overhead budget: after each sample the next is due
// after (the sample's measured CPU cost / budget), between 10 ms and 2 s,
// so a node whose /proc/stat is slow to read is sampled less often rather
// than slowed down.
//
// Not thread-safe: only the thread that called MPI_Init records; the
// wrappers let calls from other threads pass unrecorded.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collector/job/model/job_options.h"
#include "collector/job/model/rank_measures.h"
#include "collector/job/rank/call_clock.h"
#include "collector/job/rank/clock_sampler.h"
#include "collector/job/rank/frozen_session.h"
#include "collector/job/rank/interval_recorder.h"
#include "collector/job/rank/peer_waits.h"
#include "collector/job/rank/proc_sampler.h"
#include "collector/job/rank/spill_writer.h"

namespace corenoise {

double thread_cpu_seconds();

// The calling thread's CPUs (its affinity).
std::vector<unsigned> affinity_cpus();

class JobSession {
 public:
  // `ranks`: the job's size, for the exchange waits charged to each rank.
  explicit JobSession(JobOptions options, int ranks = 1);

  void enter();
  // An exchange's wait is charged to `peers`, ranks of the job (peer_waits.h).
  void exit(MpiCall call, std::uintptr_t return_address, bool step,
            std::span<const int> peers = {});
  // The library's own work between the program's calls (the live
  // reduction, live_reduction.h): `run(context, now)` at the exit of a
  // recorded call once `now` reached the time it returned last, first at
  // `first`. Its time is the library's overhead, neither the call's wait
  // nor the program's compute.
  using BetweenCalls = double (*)(void* context, double now);
  void run_between_calls(BetweenCalls run, void* context, double first) {
    between_ = run;
    between_context_ = context;
    next_between_ = first;
  }
  // The last window, at MPI_Finalize; the measures are final after it.
  void close();
  // Keeps the figures in `spill` as they are recorded (spill_writer.h).
  void attach_spill(std::unique_ptr<SpillWriter> spill);
  SpillWriter* spill() { return spill_.get(); }

  RankMeasures measures() const;
  // The figures as they stand now, for a reduction that runs while the
  // session records on (frozen_session.h).
  FrozenSession freeze() const;
  // The measures as they stood at the end of step `steps`, where that is
  // a power of two up to kMaxWarmupSteps (step_math.h): the warm-up's, once
  // the ranks have agreed where it ends. Null for any other step.
  const RankMeasures* measures_at_step(long steps) const;
  const IntervalRecorder& recorder() const { return recorder_; }
  const PeerWaits& peer_waits() const { return peers_; }
  RequestPeers& requests() { return requests_; }
  const ProcSampler& sampler() const { return sampler_; }
  const JobOptions& options() const { return options_; }
  const std::vector<unsigned>& cpus() const { return cpus_; }
  double started_unix_seconds() const { return started_unix_; }
  // The call clock (CLOCK_MONOTONIC seconds) at the start: the origin of
  // the step bins' ends (StepWaits::ends).
  double started_seconds() const { return started_; }
  std::string_view clock_source() const { return clock_.source(); }
  // Whether enter and exit read the TSC (call_clock.h) by now.
  bool uses_tsc() const { return call_clock_.uses_tsc(); }

 private:
  // `in_call`: between enter and exit, whose wait then excludes the
  // sample's cost; otherwise the compute interval does.
  void sample(double now, bool in_call = true);
  // The thread's CPU time where the interval open at `now` is long enough
  // to read it (IntervalRecorder::kUnreadInterval).
  double cpu_if_wanted(double now) const;
  // At the end of steps 1, 2, 4, ...: a sample, and the measures kept.
  void snapshot_step(std::uint64_t steps);
  // The Python line of a site's call, sampled (interval_recorder.h).
  void name_caller(CallSite& site);
  void between_calls(double now);
  RankMeasures measures_with_clock(double clock_hz) const;

  JobOptions options_;
  std::vector<unsigned> cpus_;
  double started_ = 0;
  double started_unix_ = 0;
  IntervalRecorder recorder_;
  PeerWaits peers_;
  RequestPeers requests_;
  ProcSampler sampler_;
  ClockSampler clock_;
  CallClock call_clock_;           // what enter and exit read
  double fault_cost_seconds_ = 0;  // of one minor fault, measured at start
  double next_sample_ = 0;
  BetweenCalls between_ = nullptr;
  void* between_context_ = nullptr;
  double next_between_ = std::numeric_limits<double>::infinity();
  RankMeasures windows_;  // the OS-level sums over the windows so far
  // measures_at_step's, at steps 2^i; how many are kept.
  std::array<RankMeasures, 11> step_snapshots_{};
  std::size_t step_snapshots_kept_ = 0;
  double ended_ = 0;
  std::unique_ptr<SpillWriter> spill_;
};

}  // namespace corenoise
