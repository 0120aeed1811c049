// The clock of the per-call path: JobSession's enter and exit read it twice
// a blocking call, and on a message-rate-bound program (a barrier of
// 0.3-0.8 µs on shared memory) those two readings were most of the
// library's cost. clock_gettime(CLOCK_MONOTONIC) takes 16-21 ns from the
// vDSO on this project's VM; where the kernel itself keeps time by the TSC (its
// clocksource is `tsc`: it chose the counter as invariant and in step
// across CPUs, or was told to trust it), the counter read directly takes
// half that (job_call_cost_bench prints both). Its ticks become
// CLOCK_MONOTONIC's seconds by a rate measured against that clock, anchored
// at each of the session's samples (every 10 ms to 2 s, by its budget):
// an interval's error is the rate's (parts per million of it) and, for the
// one interval that spans an anchor, the anchor's own read error (tens of
// ns). Where the two clocks stop agreeing (NTP slewing CLOCK_MONOTONIC
// faster than the rate follows, the kernel demoting the TSC, a checkpoint
// restored or a VM migrated), the clock goes back to clock_gettime until
// it has measured a new rate. Elsewhere it is clock_gettime throughout.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

#include "probe/tsc.h"

namespace corenoise {

// `clock` in seconds (clock_gettime); the session's other clocks use it too.
double clock_seconds(clockid_t clock);
double monotonic_seconds();

// TSC ticks to seconds from anchors (pure: tests give the readings).
class TscSeconds {
 public:
  // The rate comes from anchors at least this far apart: two anchors'
  // read errors (each under kMaxAnchorError) are then within 10 ppm of it.
  static constexpr double kMinSpanSeconds = 0.2;
  // An anchor read across a preemption or an interrupt is not taken.
  static constexpr double kMaxAnchorError = 1e-6;
  // Anchors further from the rate's prediction than this (plus 100 ppm of
  // the time since the last) start the rate again.
  static constexpr double kMaxDisagreement = 5e-6;

  // `ticks` read between `before` and `after` (seconds); false when that
  // bracket is too wide to anchor by.
  bool anchor(std::uint64_t ticks, double before, double after);
  bool ready() const { return seconds_per_tick_ > 0; }
  // Seconds at `ticks`; only when ready().
  double at(std::uint64_t ticks) const {
    // Signed: a counter read a few ticks before the anchor, on a CPU whose
    // counter the kernel keeps in step to within those ticks.
    const auto since = static_cast<std::int64_t>(ticks - anchor_ticks_);
    return anchor_seconds_ + static_cast<double>(since) * seconds_per_tick_;
  }

 private:
  void start(std::uint64_t ticks, double seconds);
  bool anchored_ = false;
  std::uint64_t first_ticks_ = 0;
  double first_seconds_ = 0;
  std::uint64_t anchor_ticks_ = 0;
  double anchor_seconds_ = 0;
  double seconds_per_tick_ = 0;
};

// Whether the kernel's clocksource under `sys_root` is the TSC.
bool kernel_keeps_time_by_tsc(const std::string& sys_root);

class CallClock {
 public:
  // `use_tsc`: kernel_keeps_time_by_tsc(), or false to read clock_gettime
  // always.
  explicit CallClock(bool use_tsc);
  // Inline: two readings a call. The counter unfenced: the vDSO fences its
  // read (lfence, 8 ns here, most of what the TSC saves); unfenced, a read
  // may run a few ns ahead of the instructions before it, but not ahead of
  // a wait's end, a spin loop's exit: a mispredicted branch, resolved only
  // once the load that ends the wait is done.
  double now() const { return tsc_.ready() ? tsc_.at(read_tsc()) : monotonic_seconds(); }
  // Reads both clocks together (the first of three tries whose bracket is
  // narrow enough); a no-op without the TSC.
  void anchor();
  bool uses_tsc() const { return tsc_.ready(); }

 private:
  bool use_tsc_;
  TscSeconds tsc_;
};

}  // namespace corenoise
