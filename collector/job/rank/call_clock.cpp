#include "collector/job/rank/call_clock.h"

#include <cmath>
#include <fstream>

namespace corenoise {

double clock_seconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double monotonic_seconds() { return clock_seconds(CLOCK_MONOTONIC); }

void TscSeconds::start(std::uint64_t ticks, double seconds) {
  anchored_ = true;
  first_ticks_ = ticks;
  first_seconds_ = seconds;
  seconds_per_tick_ = 0;  // clock_gettime until a new span gives a rate
}

bool TscSeconds::anchor(std::uint64_t ticks, double before, double after) {
  if (!(after >= before) || after - before > kMaxAnchorError) return false;
  const double seconds = before + (after - before) / 2;
  if (!anchored_) {
    start(ticks, seconds);
  } else if (ready() && std::abs(at(ticks) - seconds) >
                            kMaxDisagreement + 1e-4 * std::abs(seconds - anchor_seconds_)) {
    start(ticks, seconds);
  } else if (ticks <= first_ticks_ || seconds <= first_seconds_) {
    start(ticks, seconds);  // either clock went back: a restored or migrated process
  } else if (seconds - first_seconds_ >= kMinSpanSeconds) {
    // The rate over the span since the first anchor: ever more exact, and
    // moved by no more than two anchors' read errors over the span.
    seconds_per_tick_ = (seconds - first_seconds_) / static_cast<double>(ticks - first_ticks_);
  }
  anchor_ticks_ = ticks;
  anchor_seconds_ = seconds;
  return true;
}

bool kernel_keeps_time_by_tsc(const std::string& sys_root) {
  std::ifstream in(sys_root + "/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return in >> source && source == "tsc";
}

CallClock::CallClock(bool use_tsc) : use_tsc_(use_tsc) { anchor(); }

void CallClock::anchor() {
  if (!use_tsc_) return;
  // A preemption or an interrupt between the readings widens their
  // bracket: of three tries, the first narrow enough.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const double before = monotonic_seconds();
    const std::uint64_t ticks = read_tsc();
    const double after = monotonic_seconds();
    if (tsc_.anchor(ticks, before, after)) return;
  }
}

}  // namespace corenoise
