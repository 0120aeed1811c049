// The wall clock, for timestamps people and other nodes read (reports,
// synchronized start instants). Durations use the steady clock or the TSC.
#pragma once

#include <chrono>

namespace corenoise {

// Seconds since the Unix epoch (CLOCK_REALTIME).
inline double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace corenoise
