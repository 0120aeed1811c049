// The time-stamp counter: the cheapest clock there is (a few ns to read,
// no system call), which is what lets the detour probe see gaps of 1 µs.
// Modern x86 TSCs tick at a constant rate whatever the core's frequency
// (constant_tsc, nonstop_tsc), so ticks convert to seconds with one factor.
#pragma once

#include <x86intrin.h>

#include <cstdint>

namespace corenoise {

inline std::uint64_t read_tsc() { return __rdtsc(); }

// TSC ticks per second, calibrated once per process against CLOCK_MONOTONIC
// (about 30 ms, on first call). Thread-safe.
double tsc_hertz();

inline double tsc_to_seconds(std::uint64_t ticks) {
  return static_cast<double>(ticks) / tsc_hertz();
}
inline std::uint64_t seconds_to_tsc(double seconds) {
  return static_cast<std::uint64_t>(seconds * tsc_hertz());
}

}  // namespace corenoise
