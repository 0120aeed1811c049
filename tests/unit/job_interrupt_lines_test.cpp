// The interrupt lines named on a node's CPUs without privilege
// (collector/job/rank/interrupt_lines.h): /proc/interrupts and
// /proc/softirqs as this project's VM prints them, read twice; a line is
// named on a CPU where it fired much more there than on the node's others.
#include <gtest/gtest.h>

#include <string>

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

InterruptTable table(unsigned disk, unsigned timer, unsigned block) {
  InterruptTable t;
  parse_interrupts(interrupts(disk, timer), t);
  parse_softirqs(softirqs(block), t);
  return t;
}

TEST(InterruptLines, TheTablesAreReadWithTheirNamesAndOnlyPerCpuLines) {
  const InterruptTable t = table(3431065, 100200, 0);
  EXPECT_EQ(t.cpus, (std::vector<unsigned>{0, 1, 2}));
  std::vector<std::string> ids;
  for (const auto& line : t.lines) ids.push_back(line.id);
  // ERR and MIS have one count, BAD none that parse: left out.
  EXPECT_EQ(ids,
            (std::vector<std::string>{"26", "36", "41", "NMI", "LOC", "HI", "TIMER", "BLOCK"}));
  EXPECT_EQ(t.lines[1].name, "virtio1-req.0");
  EXPECT_EQ(t.lines[1].counts[1], 3431065u);
  EXPECT_EQ(t.lines[4].name, "Local timer interrupts");
  EXPECT_TRUE(t.lines[7].softirq);
  EXPECT_EQ(t.lines[7].name, "");
}

TEST(InterruptLines, ALineThatFiredMuchMoreOnOneCpuIsNamedThereAndNothingElse) {
  const InterruptTable before = table(1000, 100200, 0);
  // 50,000 disk IRQs and 40,000 BLOCK softirqs on CPU 1; timer ticks on
  // every CPU alike.
  InterruptTable after = table(51000, 160200, 40000);
  for (auto& line : after.lines) {
    if (line.id == "LOC") line.counts = {160000, 160200, 160500};
  }
  const std::vector<RankRecord::InterruptLine> named = interrupt_lines_between(before, after, 3);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].cpu, 1);
  EXPECT_EQ(named[0].id, "36");
  EXPECT_EQ(named[0].name, "virtio1-req.0");
  EXPECT_FALSE(named[0].softirq);
  EXPECT_EQ(named[0].count, 50000);
  EXPECT_EQ(named[0].excess, 50000);  // the other CPUs' median: 0
  EXPECT_EQ(named[1].id, "BLOCK");
  EXPECT_TRUE(named[1].softirq);
  // At most `per_cpu` a CPU, the most first.
  EXPECT_EQ(interrupt_lines_between(before, after, 1).size(), 1u);
  EXPECT_EQ(interrupt_lines_between(before, after, 1)[0].id, "36");
}

TEST(InterruptLines, SmallOrEvenExcessesAndChangedCpusNameNothing) {
  const InterruptTable before = table(1000, 100200, 0);
  // 900 more than the others: below kMinInterruptExcess.
  EXPECT_TRUE(interrupt_lines_between(before, table(1900, 100200, 0), 3).empty());
  // A CPU went off line between the readings: its columns do not match.
  InterruptTable fewer;
  parse_interrupts(
      "           CPU0       CPU2       \n"
      " 36:          5    99999  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n",
      fewer);
  EXPECT_TRUE(interrupt_lines_between(before, fewer, 3).empty());
  // A softirq table whose CPUs differ from the interrupts' is left out.
  InterruptTable mixed;
  parse_interrupts(interrupts(1000, 100200), mixed);
  parse_softirqs("   CPU0   CPU1\n BLOCK: 1 2\n", mixed);
  EXPECT_EQ(mixed.lines.back().id, "LOC");
  // Neither file: nothing.
  EXPECT_TRUE(read_interrupt_table("/nonexistent").lines.empty());
}

}  // namespace
}  // namespace corenoise
