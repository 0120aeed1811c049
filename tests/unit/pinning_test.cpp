// ProcessOffCpus: the other threads of the process leave the measured CPUs
// for a round and get back what they had, so that the next round, and a
// cgroup cpuset that changes between rounds, find them as they were.
#include "probe/pinning.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <vector>

namespace corenoise {
namespace {

std::vector<unsigned> affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<unsigned> cpus;
  if (sched_getaffinity(tid, sizeof set, &set) != 0) return cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// A thread that sleeps until the test ends, as the event loop does during
// a round, optionally narrowed first (as `taskset` or housekeeping-cpus do).
class SleepingThread {
 public:
  explicit SleepingThread(std::vector<unsigned> narrowed = {}) {
    std::promise<pid_t> started;
    thread_ = std::thread([this, narrowed, &started] {
      if (!narrowed.empty()) set_current_affinity(narrowed);
      started.set_value(gettid());
      release_.get_future().wait();
    });
    tid_ = started.get_future().get();
  }
  ~SleepingThread() {
    release_.set_value();
    thread_.join();
  }
  pid_t tid() const { return tid_; }

 private:
  std::promise<void> release_;
  std::thread thread_;
  pid_t tid_;
};

TEST(ProcessOffCpus, OtherThreadsLeaveTheMeasuredCpuAndGetTheirAffinityBack) {
  const std::vector<unsigned> all = current_affinity();
  ASSERT_GE(all.size(), 2u) << "this test needs two CPUs";
  SleepingThread wide;
  SleepingThread narrowed({all[0]});
  {
    ProcessOffCpus off({all[1]});
    std::vector<unsigned> without = all;
    without.erase(without.begin() + 1);
    EXPECT_EQ(affinity_of(wide.tid()), without);
    EXPECT_EQ(affinity_of(narrowed.tid()), std::vector<unsigned>{all[0]});
    // The other CPU now: the narrowed thread has nowhere else to go.
    off.move_off({all[0]});
    std::vector<unsigned> without_first(all.begin() + 1, all.end());
    EXPECT_EQ(affinity_of(wide.tid()), without_first);
    EXPECT_EQ(affinity_of(narrowed.tid()), std::vector<unsigned>{all[0]});
  }
  EXPECT_EQ(affinity_of(wide.tid()), all);
  EXPECT_EQ(affinity_of(narrowed.tid()), std::vector<unsigned>{all[0]});
  EXPECT_EQ(current_affinity(), all);
}

}  // namespace
}  // namespace corenoise
