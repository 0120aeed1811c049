// The wall clock, for timestamps people and other nodes read (reports,
// synchronized start instants). Durations use the steady clock or the TSC.
#pragma once

#include <chrono>
#include <thread>

namespace corenoise {

// Seconds since the Unix epoch (CLOCK_REALTIME).
inline double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Sleeps until the wall-clock instant `when` (unix seconds): how the nodes of
// a job start a round together.
inline void sleep_until_unix_seconds(double when) {
  std::this_thread::sleep_until(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(when))));
}

}  // namespace corenoise
