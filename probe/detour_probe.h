// The detour probe: a tight loop reading the TSC for a fixed window. Each
// gap between two reads above a threshold is time the core spent elsewhere
// (an interrupt, a softirq, another thread, the hypervisor): a detour.
// Around the window it reads what happened on that CPU meanwhile, so that a
// detour can be attributed (interrupts, softirqs, preemptions, steal).
//
// Construct and run on the thread pinned to the measured CPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "probe/proc_counters.h"
#include "probe/trace/culprit_matcher.h"

namespace corenoise {

// Log-scale histogram of detour lengths: bucket i counts detours shorter
// than kDetourBucketUpperSeconds[i] (and not in a lower bucket); the last
// bucket is unbounded.
inline constexpr int kDetourBuckets = 17;
double detour_bucket_upper_seconds(int bucket);  // 2 µs · 2^i; +inf for the last

struct DetourResult {
  double window_seconds = 0;     // time the loop ran
  double threshold_seconds = 0;  // gaps above this were detours
  std::uint64_t count = 0;
  double total_seconds = 0;  // sum of detour gaps
  double max_seconds = 0;
  std::array<std::uint64_t, kDetourBuckets> histogram{};
  // What happened on this CPU during the window (deltas); nullopt where the
  // kernel does not expose it.
  std::optional<std::uint64_t> interrupts;
  std::optional<std::uint64_t> softirqs;
  std::optional<double> steal_seconds;
  std::uint64_t preemptions = 0;  // involuntary context switches of the probe thread
  // Time the probe thread waited for its CPU while other threads ran on it.
  std::optional<double> preempted_seconds;

  double noise_ratio() const { return window_seconds > 0 ? total_seconds / window_seconds : 0; }
  // Adds another window's figures (counts, times and histograms sum; the
  // maximum is the maximum; attribution deltas sum where both have them).
  // Merging into a default-constructed result copies the other.
  void merge(const DetourResult& other);
};

class DetourProbe {
 public:
  // threshold_seconds <= 0: derived from the calibrated minimum loop time
  // on this core (50×), and never below 1 µs.
  DetourProbe(unsigned cpu, double window_seconds, double threshold_seconds,
              const ProcCounterReader& counters);
  // `start_lag` (TSC ticks): how long the probe thread waited for its CPU
  // after it was asked to start. If the core was busy with something else
  // then, that wait is the window's first detour: a periodic burst running
  // at that moment would otherwise always fall just before the window.
  // `window_ticks`: this window's length; 0 is the nominal (the
  // constructor's window_seconds). Isolated rounds vary it around the
  // nominal (probe/detour_windows.h).
  //
  // `spans`, where the CPU is traced (probe/trace/): each detour's [start,
  // end) in TSC ticks is appended while its capacity lasts (the loop never
  // allocates); the start lag's ends at `lag_end`, the TSC at which tracing
  // began, for it came before.
  DetourResult run(std::uint64_t start_lag = 0, std::uint64_t window_ticks = 0,
                   std::vector<trace::Detour>* spans = nullptr, std::uint64_t lag_end = 0) const;
  double threshold_seconds() const;
  std::uint64_t nominal_window_ticks() const { return window_ticks_; }

 private:
  unsigned cpu_;
  std::uint64_t window_ticks_;
  std::uint64_t threshold_ticks_;
  const ProcCounterReader& counters_;
};

}  // namespace corenoise
