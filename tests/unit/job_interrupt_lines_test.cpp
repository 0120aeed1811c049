// The interrupt lines named on a node's CPUs without privilege
// (collector/job/rank/interrupt_lines.h): /proc/interrupts and
// /proc/softirqs as this project's VM prints them, read twice; a line is
// named on a CPU where it fired much more there than on the node's others.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/rank/interrupt_lines.h"

namespace corenoise {
namespace {

// /proc/interrupts of a 3-CPU node, with `disk` block IRQs and `timer`
// local timer interrupts on CPU 1 (the others fixed).
std::string interrupts(unsigned disk, unsigned timer) {
  return "           CPU0       CPU1       CPU2       \n"
         " 26:          0          1          0  IO-APIC   4-edge      ttyS0\n"
         " 36:          5 " +
         std::to_string(disk) +
         "          7 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
         " 41:       7470          0          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx\n"
         "NMI:          0          0          0   Non-maskable interrupts\n"
         "LOC:     100000 " +
         std::to_string(timer) +
         "     100500   Local timer interrupts\n"
         "ERR:          0\n"
         "MIS:          0\n"
         "BAD:          1 garbled\n";
}

std::string softirqs(unsigned block) {
  return "                    CPU0       CPU1       CPU2       \n"
         "          HI:          0          0          0\n"
         "       TIMER:     736626     887730     800000\n"
         "       BLOCK:          0 " +
         std::to_string(block) + "          0\n";
}

InterruptTables tables(unsigned disk, unsigned timer, unsigned block) {
  return {parse_interrupts(interrupts(disk, timer)), parse_softirqs(softirqs(block))};
}

TEST(InterruptLines, TheTablesAreReadWithTheirNamesAndOnlyPerCpuLines) {
  const InterruptTables t = tables(3431065, 100200, 0);
  EXPECT_EQ(t.interrupts.cpus, (std::vector<unsigned>{0, 1, 2}));
  std::vector<std::string> ids;
  for (const auto& line : t.interrupts.lines) ids.push_back(line.id);
  // ERR and MIS have one count, BAD none that parse: left out.
  EXPECT_EQ(ids, (std::vector<std::string>{"26", "36", "41", "NMI", "LOC"}));
  EXPECT_EQ(t.interrupts.lines[1].name, "virtio1-req.0");
  EXPECT_EQ(t.interrupts.lines[1].counts[1], 3431065u);
  EXPECT_EQ(t.interrupts.lines[4].name, "Local timer interrupts");
  EXPECT_TRUE(t.softirqs.softirqs);
  ASSERT_EQ(t.softirqs.lines.size(), 3u);
  EXPECT_EQ(t.softirqs.lines[2].id, "BLOCK");
  EXPECT_EQ(t.softirqs.lines[2].name, "");
}

TEST(InterruptLines, ALineThatFiredMuchMoreOnOneCpuIsNamedThereAndNothingElse) {
  const InterruptTables before = tables(1000, 100200, 0);
  // 50,000 disk IRQs and 40,000 BLOCK softirqs on CPU 1; timer ticks on
  // every CPU alike.
  InterruptTables after = tables(51000, 160200, 40000);
  for (auto& line : after.interrupts.lines) {
    if (line.id == "LOC") line.counts = {160000, 160200, 160500};
  }
  const std::vector<RankRecord::InterruptLine> named =
      interrupt_lines_between(before, after, 10, 3);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].cpu, 1);
  EXPECT_EQ(named[0].id, "36");
  EXPECT_EQ(named[0].name, "virtio1-req.0");
  EXPECT_FALSE(named[0].softirq);
  EXPECT_TRUE(named[0].from_a_device());
  EXPECT_EQ(named[0].count, 50000);
  EXPECT_EQ(named[0].excess, 50000);  // the other CPUs' median: 0
  EXPECT_EQ(named[1].id, "BLOCK");
  EXPECT_TRUE(named[1].softirq);
  EXPECT_TRUE(named[1].from_a_device());
  // At most `per_cpu` a CPU, the most first.
  ASSERT_EQ(interrupt_lines_between(before, after, 10, 1).size(), 1u);
  EXPECT_EQ(interrupt_lines_between(before, after, 10, 1)[0].id, "36");
  // Over a job of 10 minutes, 100 a second more is the least: 60,000.
  EXPECT_TRUE(interrupt_lines_between(before, after, 600, 3).empty());
}

TEST(InterruptLines, ACounterThatWrappedCountsWhatItFired) {
  InterruptTables before = tables(1000, 100200, 0), after = tables(1000, 100200, 0);
  before.interrupts.lines[1].counts[1] = 0xffffff00u;  // 256 before the wrap
  after.interrupts.lines[1].counts[1] = 4744;          // 5,000 fired
  const auto named = interrupt_lines_between(before, after, 1, 3);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].count, 5000);
}

TEST(InterruptLines, SmallOrEvenExcessesAndChangedCpusNameNothing) {
  const InterruptTables before = tables(1000, 100200, 0);
  // 900 more than the others: below kMinInterruptExcess.
  EXPECT_TRUE(interrupt_lines_between(before, tables(1900, 100200, 0), 1, 3).empty());
  // A CPU went off line between the readings: its columns do not match;
  // the softirqs' table (the possible CPUs) still counts.
  InterruptTables fewer = tables(1000, 100200, 60000);
  fewer.interrupts = parse_interrupts(
      "           CPU0       CPU2       \n"
      " 36:          5    99999  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n");
  const auto named = interrupt_lines_between(before, fewer, 1, 3);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].id, "BLOCK");
  // Neither file: nothing.
  EXPECT_TRUE(read_interrupt_tables("/nonexistent").interrupts.lines.empty());
}

// Which lines a late rank's report names (job_report.h's culprits): those
// of its own CPUs, three at most; for more work only a device's; for a
// rank not late, none.
TEST(InterruptLines, ALateRanksReportNamesItsOwnCpusDeviceLines) {
  std::vector<RankRecord> records(2);
  for (int r = 0; r < 2; ++r) {
    RankRecord& rec = records[static_cast<std::size_t>(r)];
    rec.rank = r;
    rec.host = "n1";
    rec.cpus = {static_cast<unsigned>(r)};
    rec.measures.elapsed_seconds = 20;
    rec.measures.compute_seconds = rec.measures.compute_cpu_seconds = 8;
    rec.measures.wait_seconds = rec.measures.wait_cpu_seconds = 12;
    rec.measures.steps = 100;
    rec.measures.clock_hz = 2e9;
  }
  RankMeasures& late = records[1].measures;
  late.compute_seconds = late.compute_cpu_seconds = 11;
  late.wait_seconds = late.wait_cpu_seconds = 9;
  late.wait_caused_seconds = 3;
  const auto line = [](int cpu, const char* id, const char* name, bool softirq, double excess) {
    return RankRecord::InterruptLine{cpu, id, name, softirq, excess, excess};
  };
  records[0].node_interrupts = {line(1, "36", "virtio1-req.0", false, 50000),
                                line(1, "LOC", "Local timer interrupts", false, 90000),
                                line(1, "BLOCK", "", true, 40000),
                                line(1, "NET_RX", "", true, 30000),
                                line(1, "41", "virtio3-rx", false, 20000),
                                line(0, "42", "virtio3-tx", false, 80000)};
  const JobReport report = build_job_report(JobFacts{}, records);
  ASSERT_EQ(report.ranks.size(), 2u);
  const JobRank& rank1 = report.ranks[1];
  ASSERT_EQ(rank1.attribution.main_cause, JobCause::more_work);
  std::vector<std::string> named;
  for (const JobCulprit& c : rank1.culprits) named.push_back(c.line);
  EXPECT_EQ(named, (std::vector<std::string>{"36", "BLOCK", "NET_RX"}));
  EXPECT_TRUE(report.ranks[0].culprits.empty());
}

}  // namespace
}  // namespace corenoise
