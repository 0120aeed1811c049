#include "probe/detour_probe.h"

#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "probe/tsc.h"

namespace corenoise {
namespace {

constexpr double kMinThresholdSeconds = 1e-6;
constexpr std::uint64_t kThresholdLoopMultiple = 50;
constexpr double kFirstBucketUpperSeconds = 2e-6;

std::uint64_t min_loop_ticks() {
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  auto prev = read_tsc();
  for (int i = 0; i < 100000; ++i) {
    const auto now = read_tsc();
    best = std::min(best, now - prev);
    prev = now;
  }
  return std::max<std::uint64_t>(best, 1);
}

std::uint64_t involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<std::uint64_t>(usage.ru_nivcsw);
}

template <typename T>
std::optional<T> delta(const std::optional<T>& before, const std::optional<T>& after) {
  if (!before || !after || *after < *before) return std::nullopt;
  return *after - *before;
}

template <typename T>
void add_optional(std::optional<T>& into, const std::optional<T>& more) {
  into = (into && more) ? std::optional<T>(*into + *more) : std::nullopt;
}

int bucket_of(std::uint64_t gap_ticks, std::uint64_t first_upper_ticks) {
  // Buckets double: the index is how many doublings of the first upper
  // bound the gap has reached.
  const std::uint64_t ratio = gap_ticks / first_upper_ticks;
  const int index = ratio == 0 ? 0 : std::bit_width(ratio);
  return std::min(index, kDetourBuckets - 1);
}

}  // namespace

double detour_bucket_upper_seconds(int bucket) {
  if (bucket >= kDetourBuckets - 1) return std::numeric_limits<double>::infinity();
  return kFirstBucketUpperSeconds * std::ldexp(1.0, bucket);
}

void DetourResult::merge(const DetourResult& other) {
  if (window_seconds == 0) {  // an empty accumulator takes the first window as it is
    *this = other;
    return;
  }
  window_seconds += other.window_seconds;
  threshold_seconds = std::max(threshold_seconds, other.threshold_seconds);
  count += other.count;
  total_seconds += other.total_seconds;
  max_seconds = std::max(max_seconds, other.max_seconds);
  for (int i = 0; i < kDetourBuckets; ++i) histogram[i] += other.histogram[i];
  add_optional(interrupts, other.interrupts);
  add_optional(softirqs, other.softirqs);
  add_optional(steal_seconds, other.steal_seconds);
  add_optional(preempted_seconds, other.preempted_seconds);
  preemptions += other.preemptions;
}

DetourProbe::DetourProbe(unsigned cpu, double window_seconds, double threshold_seconds,
                         const ProcCounterReader& counters)
    : cpu_(cpu),
      window_ticks_(seconds_to_tsc(window_seconds)),
      threshold_ticks_(threshold_seconds > 0 ? seconds_to_tsc(threshold_seconds)
                                             : std::max(seconds_to_tsc(kMinThresholdSeconds),
                                                        kThresholdLoopMultiple * min_loop_ticks())),
      counters_(counters) {}

double DetourProbe::threshold_seconds() const { return tsc_to_seconds(threshold_ticks_); }

DetourResult DetourProbe::run(std::uint64_t start_lag, std::uint64_t window_ticks,
                              std::vector<trace::Detour>* spans, std::uint64_t lag_end) const {
  DetourResult result;
  result.threshold_seconds = threshold_seconds();
  const std::uint64_t first_upper =
      std::max<std::uint64_t>(1, seconds_to_tsc(kFirstBucketUpperSeconds));
  const CpuCounters before = counters_.read(cpu_);
  const std::uint64_t switches_before = involuntary_switches();

  // The measured loop: nothing but TSC reads unless a gap is a detour.
  std::uint64_t count = 0, total = 0, longest = 0;
  const auto keep_span = [spans](std::uint64_t from, std::uint64_t to) {
    if (spans != nullptr && spans->size() < spans->capacity()) spans->push_back({from, to});
  };
  if (start_lag > threshold_ticks_) {
    count = 1;
    total = longest = start_lag;
    ++result.histogram[bucket_of(start_lag, first_upper)];
    keep_span(lag_end - start_lag, lag_end);
  }
  const std::uint64_t start = read_tsc();
  const std::uint64_t end = start + (window_ticks > 0 ? window_ticks : window_ticks_);
  std::uint64_t prev = start;
  for (;;) {
    const std::uint64_t now = read_tsc();
    const std::uint64_t gap = now - prev;
    if (gap > threshold_ticks_) [[unlikely]] {
      ++count;
      total += gap;
      longest = std::max(longest, gap);
      ++result.histogram[bucket_of(gap, first_upper)];
      keep_span(prev, now);
    }
    prev = now;
    if (now >= end) break;
  }

  result.preemptions = involuntary_switches() - switches_before;
  const CpuCounters after = counters_.read(cpu_);
  result.window_seconds = tsc_to_seconds(prev - start + start_lag);
  result.count = count;
  result.total_seconds = tsc_to_seconds(total);
  result.max_seconds = tsc_to_seconds(longest);
  result.interrupts = delta(before.interrupts, after.interrupts);
  result.softirqs = delta(before.softirqs, after.softirqs);
  result.steal_seconds = delta(before.steal_seconds, after.steal_seconds);
  result.preempted_seconds = delta(before.run_queue_wait_seconds, after.run_queue_wait_seconds);
  return result;
}

}  // namespace corenoise
