// Controlled interference on given CPUs, for self-tests and demonstrations
// (`corenoise inject`, `corenoise selftest`, tests/tools/noise_injector):
//
//   - busy: one thread pinned to each CPU, busy for `busy_seconds` out of
//     every `period_seconds` and asleep in between — noise of a known size
//     and structure. SCHED_FIFO where permitted, so it preempts a
//     normal-priority probe the moment it wakes, as an interrupt thread or a
//     real-time daemon would; otherwise normal priority (reported).
//   - memory hog: one thread pinned to each CPU, streaming read+write over a
//     buffer much larger than the last-level cache, at normal priority —
//     contention for the memory path of the *other* cores, not preemption.
//
// Every thread stops by itself at the deadline, or promptly on request.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace corenoise {

// One periodic busy pattern; the two spellings of the command line
// (duty × period, or burst length at a frequency) both make one of these.
struct BusyPattern {
  double busy_seconds = 0.001;
  double period_seconds = 0.01;
  double duty() const { return busy_seconds / period_seconds; }
};

// --duty RATIO --period SECONDS. Throws std::invalid_argument naming the
// option unless 0 < duty ≤ 1 (1: busy all the time) and 10 µs ≤ period ≤ 10 s.
BusyPattern pattern_from_duty(double duty, double period_seconds);
// --burst-hz HZ --burst-length SECONDS: period = 1/hz. Throws
// std::invalid_argument naming the option unless 0.1 ≤ hz ≤ 100000,
// length ≥ 1 µs and length ≤ the period.
BusyPattern pattern_from_burst(double hz, double length_seconds);

// The busy windows of one thread, in nanoseconds of CLOCK_MONOTONIC: window
// k is [start + k·period, start + k·period + busy). Integer arithmetic from
// the start, so the pattern never drifts however long it runs. Pure.
struct BusySchedule {
  std::int64_t start_ns = 0;
  std::int64_t period_ns = 0;
  std::int64_t busy_ns = 0;

  static BusySchedule from(const BusyPattern& pattern, std::int64_t start_ns);
  std::int64_t window_start(std::int64_t k) const { return start_ns + k * period_ns; }
  std::int64_t window_end(std::int64_t k) const { return window_start(k) + busy_ns; }
  // The first window that has not ended by `now_ns` (k ≥ 0): a thread that
  // overslept skips the windows it missed instead of running them late,
  // back to back.
  std::int64_t next_window(std::int64_t now_ns) const;
  // When window k's busy time ends if the thread got to it at `began_ns`:
  // the full busy time from then, but never into window k + 1. A timer
  // wake-up comes tens of µs late in a VM; ending at the nominal window end
  // would cut a 100 µs burst to 60, so lateness shifts a burst, not its size.
  std::int64_t busy_until(std::int64_t k, std::int64_t began_ns) const;
};

enum class InjectionKind { busy, memory_hog };
enum class SchedPolicy { fifo, normal };
// "SCHED_FIFO" or "normal priority".
std::string to_string(SchedPolicy policy);

struct InjectionPlan {
  InjectionKind kind = InjectionKind::busy;
  std::vector<unsigned> cpus;  // one thread each
  double seconds = 10;         // then every thread stops by itself
  BusyPattern pattern;         // busy only
  bool fifo = true;            // busy only: SCHED_FIFO where permitted
  int fifo_priority = 50;
  std::size_t hog_bytes = std::size_t{256} << 20;  // memory hog only: per thread
};

// The ready line's description, e.g. "duty 10.0 % every 10 ms on CPU 1
// (SCHED_FIFO)" or "memory hog, 256 MiB streamed read+write on CPUs 0-1
// (normal priority)". `policy` is what the threads got. Pure.
std::string describe(const InjectionPlan& plan, SchedPolicy policy);

// Runs a plan. Thread-safe: stop() and finished() may be called from any
// thread; the rest from the owner's.
class NoiseInjection {
 public:
  // Starts one thread per CPU and returns once every one is pinned, at its
  // policy, with its buffer allocated. Throws std::runtime_error naming the
  // CPU if a thread cannot be pinned or its buffer allocated (no thread then
  // injects anything), std::invalid_argument for an empty CPU list.
  explicit NoiseInjection(InjectionPlan plan);
  ~NoiseInjection();  // stops and joins every thread
  NoiseInjection(const NoiseInjection&) = delete;
  NoiseInjection& operator=(const NoiseInjection&) = delete;

  // The policy every thread runs at: fifo only if all of them got it.
  SchedPolicy policy() const { return policy_; }
  const InjectionPlan& plan() const { return plan_; }
  // Asks every thread to stop; they do within a few µs when busy, at once
  // when asleep.
  void stop();
  // Joins every thread: returns at the deadline or soon after stop().
  void join();

 private:
  struct Shared;
  InjectionPlan plan_;
  SchedPolicy policy_ = SchedPolicy::normal;
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
};

}  // namespace corenoise
