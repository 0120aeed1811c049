#include "probe/proc_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace corenoise {
namespace {

const std::string kProcDir = std::string(CORENOISE_FIXTURES) + "/proc/";

double ticks_to_seconds(double ticks) { return ticks / static_cast<double>(sysconf(_SC_CLK_TCK)); }

// Copied from a 2-CPU VM; sums computed independently with awk.
TEST(ProcCountersTest, VmFixtureExactSums) {
  ProcCounterReader reader(kProcDir + "vm-2cpu");
  EXPECT_EQ(reader.proc_root(), kProcDir + "vm-2cpu");
  CpuCounters c0 = reader.read(0);
  EXPECT_EQ(c0.interrupts, 79224u);
  EXPECT_EQ(c0.softirqs, 40635u);
  EXPECT_EQ(c0.steal_seconds, 0.0);
  ASSERT_TRUE(c0.run_queue_wait_seconds);
  EXPECT_DOUBLE_EQ(*c0.run_queue_wait_seconds, 25078e-9);
  CpuCounters c1 = reader.read(1);
  EXPECT_EQ(c1.interrupts, 133528u);
  EXPECT_EQ(c1.softirqs, 111413u);
  EXPECT_EQ(c1.steal_seconds, 0.0);
  CpuCounters c2 = reader.read(2);
  EXPECT_FALSE(c2.interrupts);
  EXPECT_FALSE(c2.softirqs);
  EXPECT_FALSE(c2.steal_seconds);
}

TEST(ProcCountersTest, SchedstatRunQueueWait) {
  EXPECT_EQ(run_queue_wait_ns("5747185 25078 2\n"), 25078u);
  EXPECT_EQ(run_queue_wait_ns("1 2"), 2u);
  EXPECT_FALSE(run_queue_wait_ns(""));
  EXPECT_FALSE(run_queue_wait_ns("5747185"));
  EXPECT_FALSE(run_queue_wait_ns("5747185 -1"));
  EXPECT_FALSE(run_queue_wait_ns("x 1 2"));
  EXPECT_FALSE(ProcCounterReader(kProcDir + "garbage").read(0).run_queue_wait_seconds);
  EXPECT_FALSE(ProcCounterReader(kProcDir + "4cpu-cpu2-offline").read(0).run_queue_wait_seconds);
  // The real file of the calling thread.
  EXPECT_TRUE(ProcCounterReader("/proc").read(0).run_queue_wait_seconds);
}

// CPU 2 is offline: the header is "CPU0 CPU1 CPU3", so CPU 3 is column 2.
TEST(ProcCountersTest, OfflineCpuColumnsMapThroughTheHeader) {
  ProcCounterReader reader(kProcDir + "4cpu-cpu2-offline");
  const std::map<unsigned, std::array<std::uint64_t, 3>> expected = {
      // cpu: interrupts (ERR:/MIS: rows skipped), softirqs, steal ticks
      {0, {1162, 1116, 25}},
      {1, {2263, 2228, 15}},
      {3, {3374, 3340, 50}},
  };
  for (const auto& [cpu, want] : expected) {
    CpuCounters c = reader.read(cpu);
    EXPECT_EQ(c.interrupts, want[0]) << "cpu " << cpu;
    EXPECT_EQ(c.softirqs, want[1]) << "cpu " << cpu;
    ASSERT_TRUE(c.steal_seconds) << "cpu " << cpu;
    EXPECT_DOUBLE_EQ(*c.steal_seconds, ticks_to_seconds(want[2])) << "cpu " << cpu;
  }
  for (unsigned absent : {2u, 4u, 30u}) {
    CpuCounters c = reader.read(absent);
    EXPECT_FALSE(c.interrupts) << absent;
    EXPECT_FALSE(c.softirqs) << absent;
    EXPECT_FALSE(c.steal_seconds) << absent;
  }
}

TEST(ProcCountersTest, GarbageFixtureIsNoData) {
  ProcCounterReader reader(kProcDir + "garbage");
  for (unsigned cpu : {0u, 1u, 2u}) {
    CpuCounters c = reader.read(cpu);
    EXPECT_FALSE(c.interrupts);
    EXPECT_FALSE(c.softirqs);
    EXPECT_FALSE(c.steal_seconds);
  }
}

TEST(ProcCountersTest, MissingRootIsNoData) {
  CpuCounters c = ProcCounterReader(kProcDir + "does-not-exist").read(0);
  EXPECT_FALSE(c.interrupts);
  EXPECT_FALSE(c.softirqs);
  EXPECT_FALSE(c.steal_seconds);
}

TEST(ProcCountersTest, LiveProcReadsCpu0) {
  // Containers may hide these files; only check consistency when present.
  CpuCounters c = ProcCounterReader().read(0);
  if (access("/proc/interrupts", R_OK) == 0) {
    EXPECT_TRUE(c.interrupts);
  }
  if (access("/proc/softirqs", R_OK) == 0) {
    EXPECT_TRUE(c.softirqs);
  }
  if (c.steal_seconds) {
    EXPECT_GE(*c.steal_seconds, 0.0);
  }
}

TEST(ProcCountersTest, SumCpuColumnEdgeCases) {
  EXPECT_FALSE(sum_cpu_column("", 0));
  EXPECT_FALSE(sum_cpu_column("   CPU0   CPU1\n", 0)) << "header only";
  EXPECT_FALSE(sum_cpu_column("   CPU0   CP", 0)) << "truncated header";
  EXPECT_FALSE(sum_cpu_column("   CPU0 foo\n 0: 1 2\n", 0)) << "bad header token";
  EXPECT_FALSE(sum_cpu_column("   CPU0 CPU1\n 0: 1\n", 0)) << "only short rows";
  EXPECT_EQ(sum_cpu_column("CPU0\n 0: 5\nERR: 2\n", 0), 7u) << "one CPU: ERR counts";
  EXPECT_EQ(sum_cpu_column("CPU0 CPU1\n 0: 5 6 7 8 desc\n 1: 1 1\n", 1), 7u);
  EXPECT_EQ(sum_cpu_column("CPU0 CPU1\n 0: 5 6\nno colon 9 9\n 1: 1 x\n", 0), 5u);
  EXPECT_EQ(sum_cpu_column("CPU0 CPU1\r\n 0: 5 6\r\n", 1), 6u) << "CRLF";
  EXPECT_FALSE(sum_cpu_column("CPU0 CPU1\n 0: 5 -6\n", 1)) << "negative";
  EXPECT_FALSE(sum_cpu_column("CPU0\n 0: 99999999999999999999999\n", 0)) << "overflow";
}

TEST(ProcCountersTest, StealTicksEdgeCases) {
  const std::string stat =
      "cpu  1 2 3 4 5 6 7 8 9 10\ncpu1 1 2 3 4 5 6 7 80\ncpu10 1 2 3 4 5 6 7 99\n";
  EXPECT_EQ(steal_ticks(stat, 1), 80u);
  EXPECT_EQ(steal_ticks(stat, 10), 99u) << "cpu1 must not match cpu10";
  EXPECT_FALSE(steal_ticks(stat, 0));
  EXPECT_FALSE(steal_ticks("cpu0 1 2 3 4 5 6 7\n", 0)) << "no steal field (old kernel)";
  EXPECT_FALSE(steal_ticks("cpu0 1 2 3 4 5 6 7 x\n", 0));
  EXPECT_FALSE(steal_ticks("", 0));
  EXPECT_EQ(steal_ticks("cpu0 0 0 0 0 0 0 0 12", 0), 12u) << "no trailing newline";
}

// A generated /proc/interrupts-shaped table with random offline CPUs, random
// spacing and descriptions, and ERR:/MIS: rows: every online CPU gets the
// exact column sum, every offline CPU no data; truncating the text anywhere
// gives no data or a sum no larger than the full one, never a crash.
TEST(ProcCountersTest, RandomizedGeneratedTables) {
  std::mt19937_64 rng(42);
  for (int iteration = 0; iteration < 300; ++iteration) {
    unsigned cpus = 1 + static_cast<unsigned>(rng() % 12);
    std::vector<unsigned> online;
    for (unsigned c = 0; c < cpus; ++c) {
      if (c == 0 || rng() % 4 != 0) online.push_back(c);
    }
    auto spaces = [&] { return std::string(1 + rng() % 6, ' '); };
    std::string text = spaces();
    for (unsigned c : online) text += "CPU" + std::to_string(c) + spaces();
    text += '\n';
    std::map<unsigned, std::uint64_t> expected;
    int rows = static_cast<int>(rng() % 20);
    for (int r = 0; r < rows; ++r) {
      text += spaces() + (rng() % 3 ? std::to_string(r) : std::string("LOC")) + ":";
      for (unsigned c : online) {
        std::uint64_t v = rng() % 3 ? rng() % 1000 : rng() % 10000000000ull;
        expected[c] += v;
        text += spaces() + std::to_string(v);
      }
      if (rng() % 2) {
        text += spaces() + "IR-PCI-MSI " + std::to_string(rng() % 100000) + "-edge eth0";
      }
      text += '\n';
      if (rng() % 5 == 0 && online.size() > 1) text += "ERR:" + spaces() + "12345\n";
    }
    for (unsigned c = 0; c < cpus + 2; ++c) {
      auto got = sum_cpu_column(text, c);
      bool is_online = std::find(online.begin(), online.end(), c) != online.end();
      if (is_online && rows > 0) {
        ASSERT_EQ(got, expected[c]) << text;
      } else {
        ASSERT_FALSE(got) << "cpu " << c << "\n" << text;
      }
    }
    for (int cut = 0; cut < 20; ++cut) {
      std::size_t at = rng() % (text.size() + 1);
      unsigned c = online[rng() % online.size()];
      auto got = sum_cpu_column(std::string_view(text).substr(0, at), c);
      if (got) {
        ASSERT_LE(*got, expected[c]);
      }
    }
  }
}

TEST(ProcCountersTest, RandomBytesNeverCrash) {
  std::mt19937 rng(3);
  const std::string alphabet = "CPU0123456789: \n\tERRx-";
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text;
    for (int n = static_cast<int>(rng() % 80); n > 0; --n) {
      text += rng() % 8 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    }
    (void)sum_cpu_column(text, rng() % 4);
    (void)steal_ticks("cpu" + text, rng() % 4);
  }
  SUCCEED();
}

}  // namespace
}  // namespace corenoise
