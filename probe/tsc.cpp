#include "probe/tsc.h"

#include <time.h>

#include <algorithm>
#include <array>

namespace corenoise {
namespace {

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One estimate over a ~10 ms window. Each end pairs a TSC read with the
// clock read it brackets, so a preemption between the two reads shows up as
// a wide bracket, and the median of several windows discards it.
double calibrate_once() {
  const auto t0 = read_tsc();
  const double s0 = monotonic_seconds();
  const auto t0b = read_tsc();
  double s1 = s0;
  while (s1 - s0 < 0.010) s1 = monotonic_seconds();
  const auto t1 = read_tsc();
  const double mid0 = (static_cast<double>(t0) + static_cast<double>(t0b)) / 2;
  return (static_cast<double>(t1) - mid0) / (s1 - s0);
}

double calibrate() {
  std::array<double, 3> estimates{};
  for (auto& e : estimates) e = calibrate_once();
  std::sort(estimates.begin(), estimates.end());
  return estimates[1];
}

}  // namespace

double tsc_hertz() {
  static const double hz = calibrate();
  return hz;
}

}  // namespace corenoise
