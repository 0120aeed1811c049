#include "probe/noise_injection.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "probe/cpu_list.h"
#include "probe/futex.h"
#include "probe/pinning.h"
#include "probe/units.h"

namespace corenoise {
namespace {

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t to_ns(double seconds) {
  return static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

std::string format_cpus(const std::vector<unsigned>& cpus) {
  return (cpus.size() == 1 ? "CPU " : "CPUs ") + format_cpu_list(cpus);
}

}  // namespace

BusyPattern pattern_from_duty(double duty, double period_seconds) {
  if (!std::isfinite(duty) || duty <= 0 || duty > 1) {
    throw std::invalid_argument("--duty: expected a share of time above 0, at most 1");
  }
  if (!std::isfinite(period_seconds) || period_seconds < 1e-5 || period_seconds > 10) {
    throw std::invalid_argument("--period: expected seconds from 0.00001 to 10");
  }
  return {duty * period_seconds, period_seconds};
}

BusyPattern pattern_from_burst(double hz, double length_seconds) {
  if (!std::isfinite(hz) || hz < 0.1 || hz > 1e5) {
    throw std::invalid_argument("--burst-hz: expected a frequency from 0.1 to 100000");
  }
  const double period = 1 / hz;
  if (!std::isfinite(length_seconds) || length_seconds < 1e-6 || length_seconds > period) {
    throw std::invalid_argument(
        "--burst-length: expected seconds from 0.000001 to the period 1/burst-hz (" +
        plain_duration_text(period) + ")");
  }
  return {length_seconds, period};
}

BusySchedule BusySchedule::from(const BusyPattern& pattern, std::int64_t start_ns) {
  return {start_ns, to_ns(pattern.period_seconds), to_ns(pattern.busy_seconds)};
}

std::int64_t BusySchedule::next_window(std::int64_t now_ns) const {
  if (now_ns < window_end(0)) return 0;
  // Window k has ended when start + k·period + busy ≤ now.
  return (now_ns - start_ns - busy_ns) / period_ns + 1;
}

std::int64_t BusySchedule::busy_until(std::int64_t k, std::int64_t began_ns) const {
  return std::min(std::max(began_ns, window_start(k)) + busy_ns, window_start(k + 1));
}

std::string to_string(SchedPolicy policy) {
  return policy == SchedPolicy::fifo ? "SCHED_FIFO" : "normal priority";
}

std::string describe(const InjectionPlan& plan, SchedPolicy policy) {
  if (plan.kind == InjectionKind::memory_hog) {
    return "memory hog, " + std::to_string(plan.hog_bytes >> 20) + " MiB streamed read+write on " +
           format_cpus(plan.cpus) + " (" + to_string(SchedPolicy::normal) + ")";
  }
  return "duty " + percent_text(plan.pattern.duty()) + " (" +
         plain_duration_text(plan.pattern.busy_seconds) + " busy) every " +
         plain_duration_text(plan.pattern.period_seconds) + " on " + format_cpus(plan.cpus) + " (" +
         to_string(policy) + ")";
}

// What the threads share with their owner: the stop word (a futex, so that a
// sleeping thread wakes the moment it changes) and the start-up handshake.
struct NoiseInjection::Shared {
  std::atomic<std::uint32_t> stop{0};
  std::int64_t deadline_ns = 0;
  std::mutex mutex;
  std::condition_variable started_cv;
  std::size_t started = 0;
  bool all_fifo = true;
  std::string error;  // the first thread's failure

  void report(bool fifo, const std::string& why) {
    std::lock_guard lock(mutex);
    ++started;
    all_fifo = all_fifo && fifo;
    if (!why.empty() && error.empty()) error = why;
    started_cv.notify_all();
  }
};

namespace {

// Busy in each window of the schedule, asleep on the stop word in between.
void run_busy(std::atomic<std::uint32_t>& stop, std::int64_t deadline, const BusyPattern& pattern) {
  const BusySchedule schedule = BusySchedule::from(pattern, monotonic_ns());
  volatile std::uint64_t sink = 0;
  for (;;) {
    std::int64_t now = monotonic_ns();
    const std::int64_t k = schedule.next_window(now);
    const std::int64_t begin = schedule.window_start(k);
    if (begin >= deadline) return;
    while (now < begin) {
      // A futex rather than clock_nanosleep: stop() wakes it at once.
      futex_wait(stop, 0, std::chrono::nanoseconds(begin - now));
      if (stop.load() != 0) return;
      now = monotonic_ns();
    }
    const std::int64_t end = std::min(schedule.busy_until(k, now), deadline);
    while (monotonic_ns() < end) {
      sink = sink + 1;
      if (stop.load(std::memory_order_relaxed) != 0) return;
    }
  }
}

// Read+write over the whole buffer, checking for the end between chunks.
void run_hog(std::atomic<std::uint32_t>& stop, std::int64_t deadline, std::uint64_t* words,
             std::size_t count) {
  constexpr std::size_t kChunk = (std::size_t{1} << 20) / sizeof(std::uint64_t);
  for (;;) {
    for (std::size_t begin = 0; begin < count; begin += kChunk) {
      const std::size_t end = std::min(count, begin + kChunk);
      for (std::size_t i = begin; i < end; ++i) words[i] += 1;
      // The stores must happen: nothing reads the buffer afterwards.
      asm volatile("" : : "r"(words) : "memory");
      if (stop.load(std::memory_order_relaxed) != 0 || monotonic_ns() >= deadline) return;
    }
  }
}

}  // namespace

NoiseInjection::NoiseInjection(InjectionPlan plan)
    : plan_(std::move(plan)), shared_(std::make_shared<Shared>()) {
  if (plan_.cpus.empty()) throw std::invalid_argument("no CPU to inject noise on");
  shared_->deadline_ns = monotonic_ns() + to_ns(plan_.seconds);
  for (unsigned cpu : plan_.cpus) {
    threads_.emplace_back([this, cpu, shared = shared_] {
      bool fifo = false;
      std::unique_ptr<std::uint64_t[]> buffer;
      const std::size_t words = plan_.hog_bytes / sizeof(std::uint64_t);
      try {
        // Pin first, then allocate: the buffer is touched from its CPU,
        // so it lands on that CPU's NUMA node.
        pin_current_thread(cpu);
        if (plan_.kind == InjectionKind::memory_hog) {
          buffer.reset(new (std::nothrow) std::uint64_t[words]);
          if (!buffer) {
            throw std::system_error(
                ENOMEM, std::generic_category(),
                "cannot allocate the memory hog's buffer on CPU " + std::to_string(cpu));
          }
          for (std::size_t i = 0; i < words; ++i) buffer[i] = i;
        } else if (plan_.fifo) {
          sched_param param{};
          param.sched_priority = plan_.fifo_priority;
          fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
        }
        shared->report(fifo, "");
      } catch (const std::exception& e) {
        shared->report(false, e.what());
        return;
      }
      // Start only once every thread is in place: a failure elsewhere stops
      // this one before it has injected anything.
      {
        std::unique_lock lock(shared->mutex);
        shared->started_cv.wait(lock, [&] { return shared->started == plan_.cpus.size(); });
        if (!shared->error.empty()) return;
      }
      if (plan_.kind == InjectionKind::memory_hog) {
        run_hog(shared->stop, shared->deadline_ns, buffer.get(), words);
      } else {
        run_busy(shared->stop, shared->deadline_ns, plan_.pattern);
      }
    });
  }
  std::unique_lock lock(shared_->mutex);
  shared_->started_cv.wait(lock, [&] { return shared_->started == plan_.cpus.size(); });
  if (!shared_->error.empty()) {
    const std::string error = shared_->error;
    lock.unlock();
    join();
    throw std::runtime_error(error);
  }
  policy_ = plan_.kind == InjectionKind::busy && plan_.fifo && shared_->all_fifo
                ? SchedPolicy::fifo
                : SchedPolicy::normal;
}

NoiseInjection::~NoiseInjection() {
  stop();
  join();
}

void NoiseInjection::stop() {
  shared_->stop.store(1);
  futex_wake(shared_->stop);
}

void NoiseInjection::join() {
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

}  // namespace corenoise
