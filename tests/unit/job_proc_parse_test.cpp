// collector/job/rank/proc_parse.h: the /proc text the in-job sampler re-reads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collector/job/rank/proc_parse.h"

namespace corenoise {
namespace {

// A /proc/PID/task/TID/stat line as Linux 6.x writes it (52 fields), of a
// thread that named itself "evil) (name x": the comm ends at the LAST ')'.
// minflt (10) 99, majflt (12) 13, utime (14) 250, stime (15) 31,
// processor (39) 5; tpgid (8) is -1, as for a thread without a terminal.
constexpr std::string_view kEvilStat =
    "4242 (evil) (name x) S 5777 5777 4360 0 -1 4194304 99 7 13 0 250 31 0 0 20 0 4 0 3315841 "
    "3133440 394 18446744073709551615 94327630577664 94327630597545 140721165923952 0 0 0 0 0 0 0 "
    "0 "
    "0 17 5 0 0 0 0 0 94327630613552 94327630615168 94328554467328 140721165929088 140721165929108 "
    "140721165929108 140721165930475 0\n";

TEST(ProcParseTest, TaskStatCommEndsAtTheLastParenthesis) {
  const auto stat = parse_task_stat(kEvilStat);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "evil) (name x");
  EXPECT_EQ(stat->minor_faults, 99u);
  EXPECT_EQ(stat->major_faults, 13u);
  EXPECT_EQ(stat->user_ticks, 250u);
  EXPECT_EQ(stat->system_ticks, 31u);
  EXPECT_EQ(stat->processor, 5);
  // The comm is a view into the text.
  EXPECT_GE(stat->comm.data(), kEvilStat.data());
  EXPECT_LT(stat->comm.data(), kEvilStat.data() + kEvilStat.size());
}

// Field k (proc(5)'s numbering, from 3) holds 1000 + k, so a field read one
// off gives the wrong number.
std::string numbered_stat(std::string_view comm, int last_field) {
  std::string line = "77 (" + std::string(comm) + ")";
  for (int field = 3; field <= last_field; ++field) {
    line += ' ';
    line += field == 3 ? std::string("R") : std::to_string(1000 + field);
  }
  return line + "\n";
}

TEST(ProcParseTest, TaskStatReadsFields10And12And14And15And39) {
  const std::string line = numbered_stat("a b", 52);
  const auto stat = parse_task_stat(line);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "a b");
  EXPECT_EQ(stat->minor_faults, 1010u);
  EXPECT_EQ(stat->major_faults, 1012u);
  EXPECT_EQ(stat->user_ticks, 1014u);
  EXPECT_EQ(stat->system_ticks, 1015u);
  EXPECT_EQ(stat->processor, 1039);
  // Fields up to 39 are all it needs (without the newline, which is no
  // blank: in the kernel's lines 13 more fields follow processor).
  std::string upto39 = numbered_stat("x", 39);
  upto39.pop_back();
  EXPECT_TRUE(parse_task_stat(upto39));
  // An empty comm is a comm.
  const auto unnamed = parse_task_stat(numbered_stat("", 40));
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(unnamed->comm, "");
}

TEST(ProcParseTest, TruncatedOrGarbledTaskStatIsNoData) {
  EXPECT_FALSE(parse_task_stat(numbered_stat("x", 38)));  // ends before processor
  EXPECT_FALSE(parse_task_stat(kEvilStat.substr(0, kEvilStat.find(" 17 5 ") + 4)));
  EXPECT_FALSE(parse_task_stat(kEvilStat.substr(0, 12)));  // "4242 (evil) "
  EXPECT_FALSE(parse_task_stat("4242 (evil"));             // no ')'
  EXPECT_FALSE(parse_task_stat("4242 evil) S 1"));         // no '('
  EXPECT_FALSE(parse_task_stat(""));
  // A needed field that is not a whole number.
  std::string bad = numbered_stat("x", 52);
  bad.replace(bad.find(" 1014 "), 6, " -14 ");
  EXPECT_FALSE(parse_task_stat(bad));
  bad = numbered_stat("x", 52);
  bad.replace(bad.find(" 1039 "), 6, " 39x ");
  EXPECT_FALSE(parse_task_stat(bad));
  // A field it skips may be anything (tpgid is -1 in kEvilStat).
  std::string skipped = numbered_stat("x", 52);
  skipped.replace(skipped.find(" 1011 "), 6, " -11 ");
  EXPECT_TRUE(parse_task_stat(skipped));
}

TEST(ProcParseTest, Schedstat) {
  const auto s = parse_schedstat("5747185 25078 2\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->run_ns, 5747185u);
  EXPECT_EQ(s->wait_ns, 25078u);
  const auto big = parse_schedstat("18446744073709551615 0");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->run_ns, 18446744073709551615u);
  EXPECT_FALSE(parse_schedstat(""));
  EXPECT_FALSE(parse_schedstat("5747185\n"));
  EXPECT_FALSE(parse_schedstat("5747185 -1 2"));
  EXPECT_FALSE(parse_schedstat("x 25078 2"));
}

// cpu2 is offline; cpu11 must not pass for cpu1.
constexpr std::string_view kProcStat =
    "cpu  5000 500 2500 90000 400 70 60 50 0 0\n"
    "cpu0 1 2 3 4 5 6 7 8 0 0\n"
    "cpu1 10 20 30 40 50 60 70 80 0 0\n"
    "cpu3 1000 2000 3000 4000 5000 6000 7000 8000 0 0\n"
    "cpu11 100000 100000 100000 1 1 100000 100000 100000 0 0\n"
    "intr 123456 1 2 3\n"
    "ctxt 987654\n"
    "btime 1700000000\n"
    "cpu1 99999 99999 99999 1 1 99999 99999 99999 0 0\n";  // past the cpu lines: not ours

TEST(ProcParseTest, CpuTicksSumTheRankCpus) {
  const std::vector<unsigned> cpus = {1, 3};
  const CpuTicks ticks = parse_cpu_ticks(kProcStat, cpus);
  EXPECT_EQ(ticks.cpus_found, 2);
  EXPECT_EQ(ticks.busy, 10u + 20 + 30 + 1000 + 2000 + 3000);  // user + nice + system
  EXPECT_EQ(ticks.interrupts, 60u + 70 + 6000 + 7000);        // irq + softirq
  EXPECT_EQ(ticks.steal, 80u + 8000);

  const std::vector<unsigned> offline = {2};
  EXPECT_EQ(parse_cpu_ticks(kProcStat, offline).cpus_found, 0);
  const std::vector<unsigned> eleven = {11};
  const CpuTicks t11 = parse_cpu_ticks(kProcStat, eleven);
  EXPECT_EQ(t11.cpus_found, 1);
  EXPECT_EQ(t11.busy, 300000u);
  EXPECT_EQ(parse_cpu_ticks("", cpus).cpus_found, 0);
}

TEST(ProcParseTest, GarbledCpuLinesAreSkipped) {
  constexpr std::string_view text =
      "cpu  1 1 1 1 1 1 1 1 0 0\n"
      "cpu1 10 20 x 40 50 60 70 80 0 0\n"  // not a number
      "cpu3 1000 2000 3000 4000 5000 6000 7000 8000 0 0\n"
      "cpu4 1 2 3 4 5 6\n"            // too few fields
      "cpux 1 2 3 4 5 6 7 8 0 0\n"    // not a CPU number
      "cpu5 -1 2 3 4 5 6 7 8 0 0\n";  // a sign
  const std::vector<unsigned> cpus = {1, 3, 4, 5};
  const CpuTicks ticks = parse_cpu_ticks(text, cpus);
  EXPECT_EQ(ticks.cpus_found, 1);
  EXPECT_EQ(ticks.busy, 6000u);
  EXPECT_EQ(ticks.interrupts, 13000u);
  EXPECT_EQ(ticks.steal, 8000u);
}

TEST(ProcParseTest, StatusCounterByExactName) {
  constexpr std::string_view status =
      "Name:\tcorenoise\n"
      "Threads:\t4\n"
      "voluntary_ctxt_switches:\t150\n"
      "nonvoluntary_ctxt_switches:\t17\n";
  EXPECT_EQ(parse_status_counter(status, "nonvoluntary_ctxt_switches"), 17u);
  EXPECT_EQ(parse_status_counter(status, "voluntary_ctxt_switches"), 150u);
  EXPECT_EQ(parse_status_counter(status, "Threads"), 4u);
  EXPECT_FALSE(parse_status_counter(status, "Thread"));  // a prefix of a name is not the name
  EXPECT_FALSE(parse_status_counter(status, "ctxt_switches"));
  EXPECT_FALSE(parse_status_counter(status, "Name"));  // not a number
  EXPECT_FALSE(parse_status_counter(status, "VmRSS"));
  EXPECT_FALSE(parse_status_counter("", "Threads"));
  EXPECT_FALSE(parse_status_counter("Threads:\n", "Threads"));
}

}  // namespace
}  // namespace corenoise
