#include "probe/cpu_capacity.h"

#include <gtest/gtest.h>

namespace corenoise {
namespace {

const std::string kFixtures = std::string(CORENOISE_FIXTURES) + "/sys/";

TEST(CpuCapacity, ReadsCppcHighestPerfOfPreferredCores) {
  const TopPerf top = read_top_perf(kFixtures + "amd-preferred", {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(top.source, TopPerfSource::cppc);
  ASSERT_EQ(top.by_cpu.size(), 8u);
  for (const auto& [cpu, perf] : top.by_cpu) {
    EXPECT_DOUBLE_EQ(perf, cpu == 2 || cpu == 5 ? 255 : 228) << cpu;
  }
}

// Without acpi_cppc, intel_pstate's per-core maximum frequency (kHz).
TEST(CpuCapacity, FallsBackToCpufreqMaxFrequency) {
  const TopPerf top = read_top_perf(kFixtures + "intel-itmt", {0, 1, 2, 3});
  EXPECT_EQ(top.source, TopPerfSource::cpufreq);
  ASSERT_EQ(top.by_cpu.size(), 4u);
  EXPECT_DOUBLE_EQ(top.by_cpu.at(1), 5.8e6);
  EXPECT_DOUBLE_EQ(top.by_cpu.at(0), 5.2e6);
}

// CPPC present on some CPUs: the others get no figure rather than one in kHz.
TEST(CpuCapacity, NeverMixesSources) {
  const TopPerf top = read_top_perf(kFixtures + "amd-preferred", {0, 9});
  EXPECT_EQ(top.source, TopPerfSource::cppc);
  EXPECT_EQ(top.by_cpu.size(), 1u);
  EXPECT_EQ(top.by_cpu.count(9), 0u);
}

TEST(CpuCapacity, GarbageZeroAndMissingFilesAreNoData) {
  // cpu0: highest_perf "abc", cpu1: 0 (unset), cpu2: max_freq overflows,
  // cpu3: empty, cpu4: nothing at all. Only cpu0's cpufreq is a figure.
  const TopPerf top = read_top_perf(kFixtures + "garbage-capacity", {0, 1, 2, 3, 4});
  EXPECT_EQ(top.source, TopPerfSource::cpufreq);
  ASSERT_EQ(top.by_cpu.size(), 1u);
  EXPECT_DOUBLE_EQ(top.by_cpu.at(0), 3e6);

  const TopPerf none = read_top_perf("/nonexistent", {0, 1});
  EXPECT_EQ(none.source, TopPerfSource::none);
  EXPECT_TRUE(none.by_cpu.empty());
}

TEST(CpuCapacity, AttachSetsEachPuOrLeavesItEmpty) {
  std::vector<ProcessingUnit> pus(3);
  pus[0].cpu = 2;
  pus[1].cpu = 3;
  pus[2].cpu = 42;      // not in the tree
  pus[2].top_perf = 1;  // stale: cleared
  attach_top_perf(pus, kFixtures + "amd-preferred");
  EXPECT_EQ(pus[0].top_perf, 255);
  EXPECT_EQ(pus[1].top_perf, 228);
  EXPECT_FALSE(pus[2].top_perf);
}

}  // namespace
}  // namespace corenoise
