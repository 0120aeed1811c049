#include "collector/job/model/attribution.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "probe/stats.h"

namespace corenoise {

RankMeasures reference_rank(std::span<const RankMeasures> ranks) {
  RankMeasures reference;
  if (ranks.empty()) return reference;
  std::vector<double> column(ranks.size());
  // The clean side of the middle: the lower median of every time and
  // count, the upper median of the clock (a clean core is a faster one)
  // and of the time on the CPU inside calls (a clean rank polls).
  const auto index = [&reference](const double& field) {
    return static_cast<std::size_t>(&field - as_array(reference));
  };
  const std::size_t upper[] = {index(reference.clock_hz), index(reference.wait_cpu_seconds)};
  for (std::size_t field = 0; field < kRankMeasureCount; ++field) {
    for (std::size_t i = 0; i < ranks.size(); ++i) column[i] = as_array(ranks[i])[field];
    const bool clean_is_high =
        std::find(std::begin(upper), std::end(upper), field) != std::end(upper);
    const std::size_t middle = clean_is_high ? column.size() / 2 : (column.size() - 1) / 2;
    const auto median = column.begin() + static_cast<std::ptrdiff_t>(middle);
    std::nth_element(column.begin(), median, column.end());
    as_array(reference)[field] = *median;
  }
  // Of each rank's own off-CPU time, not of the medians of its parts.
  for (std::size_t i = 0; i < ranks.size(); ++i) column[i] = off_cpu(ranks[i]);
  const auto median = column.begin() + static_cast<std::ptrdiff_t>((column.size() - 1) / 2);
  std::nth_element(column.begin(), median, column.end());
  reference.off_cpu_seconds = *median;
  return reference;
}

double cause_threshold(std::span<const RankMeasures> ranks, const RankMeasures& reference) {
  // 5 %: two clean vCPUs of a shared VM differ by a few per cent of their
  // compute time (the hypervisor's gaps, which the guest counts as run
  // time), and would otherwise be named more-work (docs/job.md).
  double threshold = std::max(1e-3, 0.05 * reference.compute_seconds);
  if (ranks.size() >= 8) {
    // The spread of the time each rank kept the others waiting for it:
    // computing, or off its CPU inside a call.
    std::vector<double> busy;
    for (const auto& m : ranks)
      busy.push_back(m.compute_seconds + m.wait_seconds - m.wait_cpu_seconds);
    threshold = std::max(threshold, 5 * 1.4826 * stats::mad(busy));
  }
  return threshold;
}

RankAttribution attribute(const RankMeasures& rank, const RankMeasures& reference,
                          double min_seconds) {
  RankAttribution result;
  auto& causes = result.causes;
  const auto at = [&causes](JobCause cause) -> double& {
    return causes[static_cast<std::size_t>(cause)];
  };
  // Off its CPU, computing or inside a call.
  const double off_excess = std::max(0.0, off_cpu(rank) - reference.off_cpu_seconds);
  result.excess_seconds = off_cpu(rank) - reference.off_cpu_seconds +
                          (rank.compute_cpu_seconds - reference.compute_cpu_seconds);
  const std::array<std::pair<JobCause, double>, 4> takers = {{
      {JobCause::own_threads, rank.own_threads_seconds - reference.own_threads_seconds},
      {JobCause::other_processes, rank.other_processes_seconds - reference.other_processes_seconds},
      {JobCause::interrupts, rank.interrupt_seconds - reference.interrupt_seconds},
      {JobCause::steal, rank.steal_seconds - reference.steal_seconds},
  }};
  double taken = 0;
  for (const auto& [cause, excess] : takers) taken += std::max(0.0, excess);
  const double share = taken > off_excess ? off_excess / taken : 1.0;
  double explained_off = 0;
  for (const auto& [cause, excess] : takers) {
    at(cause) = std::max(0.0, excess) * share;
    explained_off += at(cause);
  }
  result.unexplained_seconds = std::max(0.0, off_excess - explained_off);

  // On it.
  double on_excess = std::max(0.0, rank.compute_cpu_seconds - reference.compute_cpu_seconds);
  at(JobCause::page_faults) =
      std::min(on_excess, std::max(0.0, rank.fault_seconds - reference.fault_seconds));
  on_excess -= at(JobCause::page_faults);
  if (rank.clock_hz > 0 && reference.clock_hz > 0 && rank.clock_hz < reference.clock_hz) {
    at(JobCause::slower_clock) =
        std::min(on_excess, rank.compute_cpu_seconds * (1.0 - rank.clock_hz / reference.clock_hz));
    on_excess -= at(JobCause::slower_clock);
  }
  at(JobCause::more_work) = on_excess;

  // Only a rank that lost more than the reference is late: one faster
  // overall that arrived last at a few steps has nothing to explain.
  // Nor is a cause named that explains less than what nothing explains (a
  // rank blocked on I/O with a little of its own threads' time).
  const auto largest = std::max_element(causes.begin(), causes.end());
  if (*largest >= min_seconds && result.excess_seconds >= min_seconds &&
      *largest >= result.unexplained_seconds) {
    result.main_cause = static_cast<JobCause>(largest - causes.begin());
  }
  return result;
}

bool is_late(const RankAttribution& attribution, const RankMeasures& measures, double threshold) {
  return attribution.main_cause.has_value() && measures.wait_caused_seconds >= threshold;
}

}  // namespace corenoise
