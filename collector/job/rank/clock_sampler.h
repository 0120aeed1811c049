// The effective clock of the rank's main thread, sampled at the sampling
// cadence: from perf_event core cycles against reference cycles where the
// kernel allows it (bare metal, perf_event_paranoid <= 2 for a task's own
// counters), else from a few microseconds of the clock probe's
// dependent-add chain (probe/clock_probe.h), which VMs and containers
// without counters still run at the core's clock.
//
// Not thread-safe: created and sampled on the main thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corenoise {

class ClockSampler {
 public:
  static constexpr std::size_t kMaxSamples = 4096;

  ClockSampler();  // opens the counters on the calling thread, if it can
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  // One reading; with counters, the clock over the window since the last.
  void sample();
  // The median of the readings, in Hz; 0 without any.
  double median_hz() const;
  // The same, recomputed only once the readings grew by 1/32 since it last
  // was: for the spill file at every sample, where a median over 4,096
  // readings each time would cost as much as the sample itself.
  double recent_median_hz();
  // "perf_event" or "dependent-add chain".
  std::string_view source() const;

 private:
  int cycles_fd_ = -1;     // group leader: core cycles
  int reference_fd_ = -1;  // reference cycles, at the TSC's rate
  std::uint64_t last_cycles_ = 0, last_reference_ = 0;
  std::array<double, kMaxSamples> samples_{};
  mutable std::array<double, kMaxSamples> scratch_{};  // median_hz() allocates nothing
  std::size_t count_ = 0;                              // readings taken; past kMaxSamples, a ring
  std::size_t recent_at_ = 0;                          // count_ when recent_ was computed
  double recent_ = 0;
};

}  // namespace corenoise
