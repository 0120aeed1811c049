// collector/job/rank/call_clock.h: TSC ticks to CLOCK_MONOTONIC's seconds
// from anchors (given readings), the kernel's clocksource read from a /sys
// tree of its own, and the clock itself against clock_gettime here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "collector/job/rank/call_clock.h"

namespace corenoise {
namespace {

constexpr double kHz = 3e9;  // the counter's rate in these readings

std::uint64_t ticks_at(double seconds) { return static_cast<std::uint64_t>(seconds * kHz); }

// An anchor read at `seconds`, its bracket 20 ns wide.
bool anchor_at(TscSeconds& tsc, std::uint64_t ticks, double seconds) {
  return tsc.anchor(ticks, seconds - 10e-9, seconds + 10e-9);
}

TEST(TscSecondsTest, NoRateUntilTwoAnchorsAreTwoHundredMillisecondsApart) {
  TscSeconds tsc;
  EXPECT_FALSE(tsc.ready());
  ASSERT_TRUE(anchor_at(tsc, ticks_at(100.0), 100.0));
  EXPECT_FALSE(tsc.ready());
  anchor_at(tsc, ticks_at(100.19), 100.19);
  EXPECT_FALSE(tsc.ready());
  anchor_at(tsc, ticks_at(100.2), 100.2);
  ASSERT_TRUE(tsc.ready());
  EXPECT_NEAR(tsc.at(ticks_at(100.5)), 100.5, 1e-9);
}

TEST(TscSecondsTest, TheRateIsTheWholeSpansAndTimesCountFromTheLastAnchor) {
  TscSeconds tsc;
  anchor_at(tsc, 0, 10.0);
  // A middle anchor read 200 ns late: its error moves neither the rate
  // taken at the last anchor nor the times after it.
  anchor_at(tsc, ticks_at(1.0), 11.0 + 200e-9);
  anchor_at(tsc, ticks_at(2.0), 12.0);
  EXPECT_NEAR(tsc.at(ticks_at(2.25)), 12.25, 1e-9);
  // A counter a few ticks behind the anchor (another CPU's, in step to
  // within them) reads a moment before it, not 2^64 ticks after.
  EXPECT_NEAR(tsc.at(ticks_at(2.0) - 300), 12.0 - 100e-9, 1e-12);
}

TEST(TscSecondsTest, AnAnchorReadAcrossAPreemptionIsNotTaken) {
  TscSeconds tsc;
  anchor_at(tsc, 0, 10.0);
  anchor_at(tsc, ticks_at(1.0), 11.0);
  ASSERT_TRUE(tsc.ready());
  // The thread was off its CPU for 3 ms between the two clock readings.
  EXPECT_FALSE(tsc.anchor(ticks_at(1.5), 11.5 - 0.003, 11.5));
  EXPECT_FALSE(tsc.anchor(ticks_at(1.5), 11.5, 11.5 - 1e-9));  // backwards
  EXPECT_NEAR(tsc.at(ticks_at(1.75)), 11.75, 1e-9);
}

TEST(TscSecondsTest, ClocksThatStopAgreeingGoBackToClockGettimeUntilANewRate) {
  TscSeconds tsc;
  anchor_at(tsc, 0, 10.0);
  anchor_at(tsc, ticks_at(1.0), 11.0);
  ASSERT_TRUE(tsc.ready());
  // The counter jumped 1 s ahead of the clock (a migrated VM): not ready
  // again until 0.2 s or more of the new span.
  anchor_at(tsc, ticks_at(3.0), 12.0);
  EXPECT_FALSE(tsc.ready());
  anchor_at(tsc, ticks_at(3.25), 12.25);
  ASSERT_TRUE(tsc.ready());
  EXPECT_NEAR(tsc.at(ticks_at(3.5)), 12.5, 1e-9);
  // Within 5 µs plus 100 ppm of the time since the last anchor, an anchor
  // is a clock read's error, and taken as is.
  anchor_at(tsc, ticks_at(3.7), 12.7 + 4e-6);
  EXPECT_TRUE(tsc.ready());
  // The counter back below where the rate began (a restored checkpoint).
  anchor_at(tsc, ticks_at(0.5), 13.0);
  EXPECT_FALSE(tsc.ready());
}

struct SysTree {
  SysTree() {
    char name[] = "/tmp/corenoise-clocksource.XXXXXX";
    root = ::mkdtemp(name);
    std::filesystem::create_directories(root + "/devices/system/clocksource/clocksource0");
  }
  ~SysTree() { std::filesystem::remove_all(root); }
  void source(const std::string& text) const {
    std::ofstream(root + "/devices/system/clocksource/clocksource0/current_clocksource") << text;
  }
  std::string root;
};

TEST(CallClockTest, TheTscOnlyWhereTheKernelKeepsTimeByIt) {
  SysTree sys;
  EXPECT_FALSE(kernel_keeps_time_by_tsc(sys.root));  // no file
  sys.source("kvm-clock\n");
  EXPECT_FALSE(kernel_keeps_time_by_tsc(sys.root));
  sys.source("tsc-early\n");
  EXPECT_FALSE(kernel_keeps_time_by_tsc(sys.root));
  sys.source("tsc\n");
  EXPECT_TRUE(kernel_keeps_time_by_tsc(sys.root));
}

// The clock as the session reads it, against clock_gettime on this
// machine: by the TSC where the kernel's clocksource is tsc (this VM's),
// else clock_gettime itself.
TEST(CallClockTest, ReadsTheMonotonicClocksSeconds) {
  for (bool use_tsc : {false, kernel_keeps_time_by_tsc("/sys")}) {
    CallClock clock(use_tsc);
    ::usleep(210'000);
    clock.anchor();
    EXPECT_EQ(clock.uses_tsc(), use_tsc);
    ::usleep(5'000);
    const double before = monotonic_seconds();
    const double now = clock.now();
    const double after = monotonic_seconds();
    // Within a millisecond: a rate off by 1 % would be 50 µs here, a
    // preemption between the readings up to a time slice.
    EXPECT_GT(now, before - 1e-3) << use_tsc;
    EXPECT_LT(now, after + 1e-3) << use_tsc;
  }
}

}  // namespace
}  // namespace corenoise
