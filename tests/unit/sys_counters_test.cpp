#include "daemon/sys_counters.h"

#include <gtest/gtest.h>

#include "daemon/busy_cpus.h"

namespace corenoise {
namespace {

const std::string kSys = std::string(CORENOISE_FIXTURES) + "/sys/xeon-throttled";

TEST(SysCounters, ReadsThrottleCountersAndCpufreqInHertz) {
  const CpuSysInfo cpu0 = read_sys_info(kSys, 0);
  EXPECT_EQ(cpu0.core_throttle_count, 12u);
  EXPECT_EQ(cpu0.package_throttle_count, 3u);
  EXPECT_DOUBLE_EQ(*cpu0.cur_hertz, 2.1e9);
  EXPECT_DOUBLE_EQ(*cpu0.max_hertz, 3.5e9);
  const CpuSysInfo cpu1 = read_sys_info(kSys, 1);
  EXPECT_EQ(cpu1.core_throttle_count, 0u);
  EXPECT_DOUBLE_EQ(*cpu1.cur_hertz, 3.4e9);
}

TEST(SysCounters, GarbageEmptyAndMissingFilesAreNoData) {
  const CpuSysInfo cpu2 = read_sys_info(kSys, 2);  // garbage and empty files
  EXPECT_FALSE(cpu2.core_throttle_count);
  EXPECT_FALSE(cpu2.package_throttle_count);
  EXPECT_FALSE(cpu2.cur_hertz);
  EXPECT_FALSE(cpu2.max_hertz);
  const CpuSysInfo absent = read_sys_info(kSys, 7);
  EXPECT_FALSE(absent.core_throttle_count || absent.cur_hertz);
  const CpuSysInfo nowhere = read_sys_info("/nonexistent", 0);
  EXPECT_FALSE(nowhere.core_throttle_count || nowhere.cur_hertz);
}

TEST(SysCounters, ParsesOnlyWholeNumbers) {
  EXPECT_EQ(parse_sys_number("42\n"), 42u);
  EXPECT_EQ(parse_sys_number("0"), 0u);
  EXPECT_FALSE(parse_sys_number(""));
  EXPECT_FALSE(parse_sys_number("\n"));
  EXPECT_FALSE(parse_sys_number("-1"));
  EXPECT_FALSE(parse_sys_number("12abc"));
  EXPECT_FALSE(parse_sys_number("99999999999999999999999"));
}

TEST(BusyCpus, BusyShareBetweenTwoReadings) {
  const auto before = parse_cpu_times(
      "cpu  1 2 3 4 5 6 7 8 9 10\n"
      "cpu0 100 0 50 800 50 0 0 0 0 0\n"
      "cpu1 100 0 0 900 0 0 0 0 0 0\n"
      "intr 12345\n");
  const auto after = parse_cpu_times(
      "cpu0 180 0 60 820 50 5 5 0 0 0\n"   // +100 busy of +120 total
      "cpu1 100 0 0 1000 0 0 0 0 0 0\n");  // idle
  ASSERT_EQ(before.size(), 2u);
  EXPECT_NEAR(*busy_fraction(before, after, 0), 100.0 / 120.0, 1e-12);
  EXPECT_DOUBLE_EQ(*busy_fraction(before, after, 1), 0.0);
  EXPECT_FALSE(busy_fraction(before, after, 2));
  EXPECT_FALSE(busy_fraction(before, before, 0));  // no time passed
}

// Found by tests/fuzz (proc_stat): the kernel's idle and iowait may go
// backwards, and the share was then above 1 ("busy (6845 %)").
TEST(BusyCpus, BusyShareStaysAtMostOneWhenIdleGoesBackwards) {
  const auto before = parse_cpu_times("cpu1 2806 0 2582 35506 499 0 135 1 0 0\n");
  const auto after = parse_cpu_times("cpu1 2 82 43 0 19 1 73845 0 0 0\n");
  ASSERT_TRUE(busy_fraction(before, after, 1));
  EXPECT_DOUBLE_EQ(*busy_fraction(before, after, 1), 1.0);
}

TEST(BusyCpus, MalformedLinesAreLeftOut) {
  const auto times = parse_cpu_times("cpu0 1 2 3\ncpuX 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\n");
  EXPECT_EQ(times.size(), 1u);
  EXPECT_TRUE(times.contains(1));
  EXPECT_FALSE(read_cpu_times("/nonexistent").size());
  EXPECT_FALSE(read_cpu_times("/proc").empty());
}

// tests/fuzz's proc_stat target checks busy <= total: istream's >> read "-1"
// as 2^64-1, and the sums wrapped, so a garbled line broke it.
TEST(BusyCpus, SignedAndOverflowingNumbersAreMalformed) {
  const auto times = parse_cpu_times(
      "cpu0 -1 0 0 1 0 0 0 0\n"
      "cpu1 +5 0 0 1 0 0 0 0\n"
      "cpu2 18446744073709551615 0 0 1 0 0 0 0\n"
      "cpu3 18446744073709551615 0 0 0 0 0 0 0\n"
      "cpu4 1 2 3 4 5 6 7 8\n");
  EXPECT_EQ(times.size(), 2u);
  EXPECT_EQ(times.at(3).busy, 18446744073709551615u);
  EXPECT_EQ(times.at(3).total, 18446744073709551615u);
  EXPECT_EQ(times.at(4).busy, 1u + 2 + 3 + 6 + 7 + 8);
  EXPECT_EQ(times.at(4).total, 36u);
}

}  // namespace
}  // namespace corenoise
