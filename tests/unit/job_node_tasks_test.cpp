// collector/job/rank/node_tasks.h: the other processes on a node's CPUs, from
// two scans of every task.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "collector/job/rank/node_tasks.h"
#include "job_proc_tree.h"

namespace corenoise {
namespace {

using job_test::ProcTree;
using job_test::schedstat_line;
using job_test::stat_line;

constexpr std::uint64_t kSecond = 1'000'000'000;

TaskTime task(long pid, long tid, const std::string& command, double seconds, int cpu) {
  return {pid, tid, command, static_cast<std::uint64_t>(seconds * kSecond), cpu};
}

class CulpritsTest : public ::testing::Test {
 protected:
  const std::vector<long> ranks = {10, 11};  // the job's own processes
  std::vector<TaskTime> before = {
      task(10, 10, "solver", 1.0, 1),      task(11, 11, "solver", 1.0, 2),
      task(20, 20, "stress", 1.0, 1),      task(20, 21, "stress", 2.0, 1),
      task(30, 30, "kworker/1:0", 0.5, 1), task(40, 40, "sshd", 1.0, 2),
      task(50, 55, "old", 3.0, 2),  // exits; its tid is reused by pid 60
  };
  std::vector<TaskTime> after = {
      task(10, 10, "solver", 9.0, 1),  // a rank: excluded however busy
      task(11, 11, "solver", 9.0, 2),       task(20, 20, "stress", 2.0, 1),  // +1 s
      task(20, 21, "stress", 3.5, 1),        // +1.5 s: stress took 2.5 s of CPU 1
      task(30, 30, "kworker/1:0", 0.75, 1),  // +0.25 s
      task(70, 70, "backup", 0.5, 1),        // new: its whole 0.5 s
      task(40, 40, "sshd", 1.0078125, 2),    // +7.8 ms: under min_seconds
      task(60, 55, "reused", 0.25, 2),       // tid 55 in another process: new, 0.25 s
      task(80, 80, "nowhere", 5.0, -1),      // no CPU known
  };
};

TEST_F(CulpritsTest, BusiestProcessesPerCpuSinceTheFirstScan) {
  const auto culprits = culprits_between(before, after, ranks, 3, 0.01);
  ASSERT_EQ(culprits.size(), 4u);
  EXPECT_EQ(culprits[0].cpu, 1);
  EXPECT_EQ(culprits[0].pid, 20);
  EXPECT_EQ(culprits[0].command, "stress");
  EXPECT_NEAR(culprits[0].seconds, 2.5, 1e-9);
  EXPECT_EQ(culprits[1].cpu, 1);
  EXPECT_EQ(culprits[1].pid, 70);
  EXPECT_EQ(culprits[1].command, "backup");
  EXPECT_NEAR(culprits[1].seconds, 0.5, 1e-9);
  EXPECT_EQ(culprits[2].cpu, 1);
  EXPECT_EQ(culprits[2].pid, 30);
  EXPECT_NEAR(culprits[2].seconds, 0.25, 1e-9);
  // CPU 2: the reused tid counts its whole run time (0.25 s, not
  // max(0, 0.25 - 3) = 0); sshd's 7.8 ms is under min_seconds.
  EXPECT_EQ(culprits[3].cpu, 2);
  EXPECT_EQ(culprits[3].pid, 60);
  EXPECT_EQ(culprits[3].command, "reused");
  EXPECT_NEAR(culprits[3].seconds, 0.25, 1e-9);
}

TEST_F(CulpritsTest, PerCpuLimitKeepsTheBusiest) {
  const auto culprits = culprits_between(before, after, ranks, 1, 0.01);
  ASSERT_EQ(culprits.size(), 2u);
  EXPECT_EQ(std::tie(culprits[0].cpu, culprits[0].pid), std::make_tuple(1, 20L));
  EXPECT_EQ(std::tie(culprits[1].cpu, culprits[1].pid), std::make_tuple(2, 60L));
  EXPECT_TRUE(culprits_between(before, after, ranks, 0, 0.01).empty());
}

TEST_F(CulpritsTest, MinSecondsAndExcludedPids) {
  // A lower floor names sshd's 7.8 ms.
  const auto all = culprits_between(before, after, ranks, 10, 0.001);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[4].pid, 40);
  EXPECT_NEAR(all[4].seconds, 0.0078125, 1e-9);
  // Without exclusions the ranks themselves are the busiest.
  const auto unexcluded = culprits_between(before, after, {}, 10, 0.01);
  ASSERT_FALSE(unexcluded.empty());
  EXPECT_EQ(unexcluded[0].pid, 10);
  EXPECT_NEAR(unexcluded[0].seconds, 8.0, 1e-9);
  // Excluding stress too leaves backup first on CPU 1.
  const std::vector<long> more = {10, 11, 20};
  const auto without_stress = culprits_between(before, after, more, 3, 0.01);
  ASSERT_FALSE(without_stress.empty());
  EXPECT_EQ(without_stress[0].pid, 70);
  for (const auto& c : without_stress) EXPECT_NE(c.pid, 20);
}

TEST_F(CulpritsTest, AProcessIsNamedOnEachCpuItsTasksLastRanOn) {
  after.push_back(task(90, 90, "spread", 0.25, 1));
  after.push_back(task(90, 91, "spread", 0.5, 2));
  const auto culprits = culprits_between(before, after, ranks, 10, 0.01);
  int found = 0;
  for (const auto& c : culprits) {
    if (c.pid != 90) continue;
    ++found;
    EXPECT_NEAR(c.seconds, c.cpu == 1 ? 0.25 : 0.5, 1e-9);
  }
  EXPECT_EQ(found, 2);
}

TEST(ScanTasksTest, EveryTaskWithItsProcessCommand) {
  ProcTree tree;
  const auto add = [&](long pid, long tid, const std::string& comm, std::uint64_t run_ns, int cpu) {
    const std::string dir = std::to_string(pid) + "/task/" + std::to_string(tid);
    tree.write(dir + "/stat", stat_line(tid, comm, cpu));
    tree.write(dir + "/schedstat", schedstat_line(run_ns, 17));
  };
  add(20, 20, "python3", 3 * kSecond, 4);
  add(20, 21, "ThreadPoolExec", kSecond / 2, 5);  // a thread that renamed itself
  add(2, 2, "kthreadd", 1000, 0);
  add(35, 36, "orphan-thread", 250, 1);  // its main thread is gone: keeps its own name
  // Not tasks: /proc's other entries, a task folder with a garbled stat.
  tree.write("stat", "cpu  1 2 3 4 5 6 7 8 0 0\n");
  tree.write("self/task/99/stat", stat_line(99, "self", 0));
  tree.write("self/task/99/schedstat", schedstat_line(1));
  tree.write("40/task/40/stat", "40 (garbled");
  tree.write("40/task/40/schedstat", schedstat_line(1));
  tree.write("41/task/41/stat", stat_line(41, "no-schedstat", 0));
  tree.write("41/task/notatid/stat", stat_line(41, "x", 0));

  std::vector<TaskTime> tasks = scan_tasks(tree.root());
  std::sort(tasks.begin(), tasks.end(), [](const TaskTime& a, const TaskTime& b) {
    return std::tie(a.pid, a.tid) < std::tie(b.pid, b.tid);
  });
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(std::tie(tasks[0].pid, tasks[0].tid, tasks[0].command),
            std::make_tuple(2L, 2L, std::string("kthreadd")));
  EXPECT_EQ(tasks[0].run_ns, 1000u);
  EXPECT_EQ(tasks[0].cpu, 0);
  EXPECT_EQ(std::tie(tasks[1].pid, tasks[1].tid), std::make_tuple(20L, 20L));
  EXPECT_EQ(tasks[1].command, "python3");
  EXPECT_EQ(tasks[1].run_ns, 3 * kSecond);
  EXPECT_EQ(tasks[1].cpu, 4);
  EXPECT_EQ(std::tie(tasks[2].pid, tasks[2].tid), std::make_tuple(20L, 21L));
  EXPECT_EQ(tasks[2].command, "python3");  // the process's, not the thread's
  EXPECT_EQ(tasks[2].run_ns, kSecond / 2);
  EXPECT_EQ(tasks[2].cpu, 5);
  EXPECT_EQ(std::tie(tasks[3].pid, tasks[3].tid), std::make_tuple(35L, 36L));
  EXPECT_EQ(tasks[3].command, "orphan-thread");

  EXPECT_TRUE(scan_tasks(tree.root() + "/nonexistent").empty());
}

TEST(ScanTasksTest, TwoScansOfAFixtureTreeNameTheCulprit) {
  ProcTree tree;
  const auto put = [&](long pid, long tid, const std::string& comm, std::uint64_t run_ns, int cpu) {
    const std::string dir = std::to_string(pid) + "/task/" + std::to_string(tid);
    tree.write(dir + "/stat", stat_line(tid, comm, cpu));
    tree.write(dir + "/schedstat", schedstat_line(run_ns));
  };
  put(10, 10, "solver", kSecond, 3);
  put(500, 500, "stress-ng", kSecond, 3);
  const auto first = scan_tasks(tree.root());
  put(10, 10, "solver", 5 * kSecond, 3);
  put(500, 500, "stress-ng", 3 * kSecond, 3);
  const auto second = scan_tasks(tree.root());
  const std::vector<long> ranks = {10};
  const auto culprits = culprits_between(first, second, ranks, 3, 0.01);
  ASSERT_EQ(culprits.size(), 1u);
  EXPECT_EQ(culprits[0].cpu, 3);
  EXPECT_EQ(culprits[0].pid, 500);
  EXPECT_EQ(culprits[0].command, "stress-ng");
  EXPECT_NEAR(culprits[0].seconds, 2.0, 1e-9);
}

}  // namespace
}  // namespace corenoise
