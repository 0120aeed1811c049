// collector/job/rank/proc_sampler.h on a /proc tree of its own: the deltas
// between two samples after the files were rewritten in place.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "collector/job/rank/proc_sampler.h"
#include "job_proc_tree.h"

namespace corenoise {
namespace {

using job_test::ProcTree;
using job_test::schedstat_line;
using job_test::stat_line;

double ticks(double n) { return n / static_cast<double>(::sysconf(_SC_CLK_TCK)); }

struct Cpu {
  unsigned cpu;
  std::uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

std::string proc_stat(const std::vector<Cpu>& cpus) {
  std::string text = "cpu  1 1 1 1 1 1 1 1 0 0\n";
  for (const Cpu& c : cpus) {
    text += "cpu" + std::to_string(c.cpu);
    for (std::uint64_t v :
         {c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal}) {
      text += " " + std::to_string(v);
    }
    text += " 0 0\n";
  }
  return text + "intr 1000 1 2 3\nctxt 5000\nbtime 1700000000\nprocesses 4000\n";
}

std::string status(std::uint64_t involuntary) {
  return "Name:\tsolver\nState:\tR (running)\nThreads:\t4\nvoluntary_ctxt_switches:\t900\n"
         "nonvoluntary_ctxt_switches:\t" +
         std::to_string(involuntary) + "\n";
}

class ProcSamplerTest : public ::testing::Test {
 protected:
  static constexpr int kMain = 100;
  const std::vector<unsigned> rank_cpus = {1, 3};
  ProcTree tree;

  // The main thread's faults, written into its task's stat line by task().
  std::uint64_t main_minor = 0, main_major = 0;

  void task(int tid, const std::string& comm, int processor, std::uint64_t run_ns,
            std::uint64_t wait_ns = 0) {
    const std::string dir = "self/task/" + std::to_string(tid);
    const bool main = tid == kMain;
    tree.write(dir + "/stat",
               stat_line(tid, comm, processor, main ? main_minor : 0, main ? main_major : 0));
    tree.write(dir + "/schedstat", schedstat_line(run_ns, wait_ns));
  }
  // The main thread's faults and involuntary switches (set before its task()).
  void process(std::uint64_t minor, std::uint64_t major, std::uint64_t involuntary) {
    main_minor = minor;
    main_major = major;
    tree.write("self/task/" + std::to_string(kMain) + "/status", status(involuntary));
  }
};

TEST_F(ProcSamplerTest, DeltasBetweenSamples) {
  // The baseline: the main thread on CPU 1, its other threads on 3, 0, 1.
  tree.write("stat", proc_stat({{0, 100, 0, 100, 9000, 0, 0, 0, 0},
                                {1, 1000, 10, 200, 5000, 0, 30, 20, 5},
                                {3, 2000, 0, 300, 5000, 0, 40, 10, 0}}));
  process(1000, 10, 5);
  task(kMain, "solver", 1, 1'000'000'000, 200'000'000);
  task(101, "omp-1", 3, 500'000'000);
  task(102, "omp-2", 0, 700'000'000);
  task(103, "io-helper", 1, 100'000'000);

  ProcSampler sampler(tree.root(), rank_cpus, kMain);
  EXPECT_TRUE(sampler.has_cpu_ticks());

  // Window 1.
  tree.write("stat",
             proc_stat({{0, 150, 0, 100, 9000, 0, 0, 0, 0},        // not the rank's
                        {1, 1030, 10, 220, 5100, 0, 33, 22, 5},    // busy +50, irq +5
                        {3, 2040, 0, 310, 5100, 0, 45, 10, 7}}));  // busy +50, irq +5, steal +7
  process(1500, 12, 9);
  task(kMain, "solver", 1, 1'500'000'000, 250'000'000);  // +0.5 s: the main thread
  task(101, "omp-1", 3, 750'000'000);                    // +0.25 s on a rank CPU
  task(102, "omp-2", 0, 1'700'000'000);                  // +1 s elsewhere
  task(103, "io-helper", 1, 350'000'000);                // +0.25 s on a rank CPU
  task(104, "omp-3", 3, 125'000'000);                    // new: its whole 0.125 s
  const ProcWindow first = sampler.sample();
  EXPECT_NEAR(first.own_threads_seconds, 0.25 + 0.25 + 0.125, 1e-9);
  EXPECT_NEAR(first.own_process_seconds, 0.5 + 0.25 + 0.25 + 0.125, 1e-9);
  EXPECT_NEAR(first.main_run_queue_seconds, 0.05, 1e-9);
  EXPECT_DOUBLE_EQ(first.cpu_busy_seconds, ticks(100));
  EXPECT_DOUBLE_EQ(first.interrupt_seconds, ticks(10));
  EXPECT_DOUBLE_EQ(first.steal_seconds, ticks(7));
  EXPECT_EQ(first.minor_faults, 500u);
  EXPECT_EQ(first.major_faults, 2u);
  EXPECT_EQ(first.involuntary_switches, 4u);

  // Window 2: io-helper exited, omp-3 moved off the rank's CPUs and omp-2
  // onto them; nothing else ran.
  tree.remove("self/task/103");
  task(kMain, "solver", 1, 2'000'000'000, 250'000'000);
  task(101, "omp-1", 3, 1'250'000'000);  // +0.5 s
  task(102, "omp-2", 1, 1'762'500'000);  // +0.0625 s, now on CPU 1
  task(104, "omp-3", 0, 1'125'000'000);  // +1 s on CPU 0
  const ProcWindow second = sampler.sample();
  EXPECT_NEAR(second.own_threads_seconds, 0.5 + 0.0625, 1e-9);
  EXPECT_NEAR(second.own_process_seconds, 0.5 + 0.5 + 0.0625, 1e-9);
  EXPECT_DOUBLE_EQ(second.main_run_queue_seconds, 0.0);
  EXPECT_DOUBLE_EQ(second.cpu_busy_seconds, 0.0);
  EXPECT_EQ(second.minor_faults, 0u);
  EXPECT_EQ(second.involuntary_switches, 0u);

  // Each thread's time on the rank's CPUs since the baseline, the departed
  // one included, the main thread not; busiest first. They add up to the
  // windows' own-threads time.
  const std::vector<OwnThread> threads = sampler.threads();
  ASSERT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads[0].tid, 101);
  EXPECT_EQ(threads[0].name, "omp-1");
  EXPECT_NEAR(threads[0].seconds_on_rank_cpus, 0.75, 1e-9);
  EXPECT_EQ(threads[1].tid, 103);
  EXPECT_EQ(threads[1].name, "io-helper");
  EXPECT_NEAR(threads[1].seconds_on_rank_cpus, 0.25, 1e-9);
  EXPECT_EQ(threads[2].tid, 104);
  EXPECT_EQ(threads[2].name, "omp-3");
  EXPECT_NEAR(threads[2].seconds_on_rank_cpus, 0.125, 1e-9);
  EXPECT_EQ(threads[3].tid, 102);
  EXPECT_NEAR(threads[3].seconds_on_rank_cpus, 0.0625, 1e-9);
  double total = 0;
  for (const OwnThread& t : threads) total += t.seconds_on_rank_cpus;
  EXPECT_NEAR(total, first.own_threads_seconds + second.own_threads_seconds, 1e-9);
}

TEST_F(ProcSamplerTest, ThreadNamesKeepFifteenCharacters) {
  tree.write("stat", proc_stat({{1, 0, 0, 0, 0, 0, 0, 0, 0}}));
  process(0, 0, 0);
  task(kMain, "solver", 1, 0);
  task(101, "a-very-long-thread-name", 1, 0);  // the kernel caps comm at 15; the sampler too
  ProcSampler sampler(tree.root(), rank_cpus, kMain);
  task(101, "a-very-long-thread-name", 1, 250'000'000);
  sampler.sample();
  const auto threads = sampler.threads();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].name, "a-very-long-thr");
  EXPECT_NEAR(threads[0].seconds_on_rank_cpus, 0.25, 1e-9);
}

TEST_F(ProcSamplerTest, WithoutTheRankCpusInProcStatThereAreNoTicks) {
  tree.write("stat", proc_stat({{0, 100, 0, 100, 9000, 0, 0, 0, 0}}));  // a container's view
  process(0, 0, 0);
  task(kMain, "solver", 1, 0);
  ProcSampler sampler(tree.root(), rank_cpus, kMain);
  tree.write("stat", proc_stat({{0, 900, 0, 900, 9000, 0, 50, 50, 50}}));
  const ProcWindow window = sampler.sample();
  EXPECT_FALSE(sampler.has_cpu_ticks());
  EXPECT_DOUBLE_EQ(window.cpu_busy_seconds, 0.0);
  EXPECT_DOUBLE_EQ(window.interrupt_seconds, 0.0);
}

TEST(ProcSamplerMissingTest, ANonexistentRootIsNoDataNotAnError) {
  ProcSampler sampler("/nonexistent/corenoise-proc", {0}, 1);
  const ProcWindow window = sampler.sample();
  EXPECT_FALSE(sampler.has_cpu_ticks());
  EXPECT_DOUBLE_EQ(window.own_threads_seconds, 0.0);
  EXPECT_DOUBLE_EQ(window.cpu_busy_seconds, 0.0);
  EXPECT_EQ(window.minor_faults, 0u);
  EXPECT_TRUE(sampler.threads().empty());
}

}  // namespace
}  // namespace corenoise
