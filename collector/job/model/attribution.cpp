#include "collector/job/model/attribution.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "probe/stats.h"

namespace corenoise {

namespace {

// Fields in as_array's order.
constexpr std::size_t kComputeField = offsetof(RankMeasures, compute_seconds) / sizeof(double);
constexpr std::size_t kComputeCpuField =
    offsetof(RankMeasures, compute_cpu_seconds) / sizeof(double);

MeasureFields fields_of(std::span<const RankMeasures> ranks) {
  return {ranks.size(),
          [ranks](std::size_t rank, std::size_t field) { return as_array(ranks[rank])[field]; }};
}

}  // namespace

RankMeasures reference_rank(std::span<const RankMeasures> ranks) {
  return reference_rank(fields_of(ranks));
}

RankMeasures reference_rank(const MeasureFields& ranks) {
  RankMeasures reference;
  if (ranks.count == 0) return reference;
  std::vector<double> column(ranks.count);
  // The clean side of the middle: the lower median of every time and
  // count, the upper median of the clock (a clean core is a faster one)
  // and of the time on the CPU inside calls (a clean rank polls).
  const auto index = [&reference](const double& field) {
    return static_cast<std::size_t>(&field - as_array(reference));
  };
  const std::size_t upper[] = {index(reference.clock_hz), index(reference.wait_cpu_seconds)};
  for (std::size_t field = 0; field < kRankMeasureCount; ++field) {
    for (std::size_t i = 0; i < ranks.count; ++i) column[i] = ranks.field(i, field);
    const bool clean_is_high =
        std::find(std::begin(upper), std::end(upper), field) != std::end(upper);
    const std::size_t middle = clean_is_high ? column.size() / 2 : (column.size() - 1) / 2;
    const auto median = column.begin() + static_cast<std::ptrdiff_t>(middle);
    std::nth_element(column.begin(), median, column.end());
    as_array(reference)[field] = *median;
  }
  // Of each rank's own off-CPU time, not of the medians of its parts.
  for (std::size_t i = 0; i < ranks.count; ++i)
    column[i] = ranks.field(i, kComputeField) - ranks.field(i, kComputeCpuField);
  const auto median = column.begin() + static_cast<std::ptrdiff_t>((column.size() - 1) / 2);
  std::nth_element(column.begin(), median, column.end());
  reference.off_cpu_seconds = *median;
  return reference;
}

namespace {

// The on-CPU causes, judged against CauseThresholds::on_cpu_seconds.
constexpr JobCause kOnCpu[] = {JobCause::page_faults, JobCause::slower_clock, JobCause::more_work};

double robust_spread(const std::vector<double>& values) { return 5 * 1.4826 * stats::mad(values); }

// Wall seconds of computing per second of CPU work at the job's typical
// share of its CPU: the reference's compute time over its CPU time in it.
// About 1 where each rank has a core of its own; 8 for 16 ranks sharing 2
// CPUs. Never below 1.
double stretch_of(const RankMeasures& reference) {
  if (reference.compute_cpu_seconds <= 0) return 1;
  return 1 + std::max(0.0, reference.off_cpu_seconds) / reference.compute_cpu_seconds;
}

// The takers' time on the rank's CPUs beyond the reference's.
std::array<std::pair<JobCause, double>, 4> taker_excess(const RankMeasures& rank,
                                                        const RankMeasures& reference) {
  return {{
      {JobCause::own_threads,
       std::max(0.0, rank.own_threads_seconds - reference.own_threads_seconds)},
      {JobCause::other_processes,
       std::max(0.0, rank.other_processes_seconds - reference.other_processes_seconds)},
      {JobCause::interrupts, std::max(0.0, rank.interrupt_seconds - reference.interrupt_seconds)},
      {JobCause::steal, std::max(0.0, rank.steal_seconds - reference.steal_seconds)},
  }};
}

// The stretch of the rank's extra work: the job's typical one, or more
// where the rank itself ran slower than that and was runnable for it. Its
// extra work ran while the others waited for it, and where they wait on
// its own CPUs by polling (ranks sharing a CPU, MPICH's default), they
// take that CPU from it as no reference rank saw: two ranks on one CPU
// give the late one's extra work half of it. Off its CPU without being
// runnable (I/O, a lock, a sleep) is not stretch, nor what a taker
// explains: capped at the run-queue time the kernel counted for it while
// computing, at least its run-queue time over the job less all its time
// off the CPU inside its waits (which a polling rank spends runnable).
double work_stretch(const RankMeasures& rank, const RankMeasures& reference, double taken) {
  const double typical = stretch_of(reference);
  if (rank.compute_cpu_seconds <= 0) return typical;
  const double own = 1 + std::max(0.0, off_cpu(rank) - taken) / rank.compute_cpu_seconds;
  const double off_in_waits = std::max(0.0, rank.wait_seconds - rank.wait_cpu_seconds);
  const double runnable_computing = std::max(0.0, rank.run_queue_seconds - off_in_waits);
  const double runnable = 1 + runnable_computing / rank.compute_cpu_seconds;
  return std::max(typical, std::min(own, runnable));
}

// Off its CPU beyond what its work would have been (at the typical share,
// or its own where work_stretch says so), shared among the takers
// (taker_excess, `taken` in all) in proportion to each one's excess over
// the reference, at most each one's; the rest unexplained.
void attribute_off_cpu(const std::array<std::pair<JobCause, double>, 4>& takers, double taken,
                       double off_excess, RankAttribution& result) {
  const double share = taken > off_excess ? off_excess / taken : 1.0;
  double explained = 0;
  for (const auto& [cause, excess] : takers) {
    result.causes[index_of(cause)] = excess * share;
    explained += result.causes[index_of(cause)];
  }
  result.unexplained_seconds = std::max(0.0, off_excess - explained);
}

// More CPU time than the reference's, in CPU seconds: page faults first,
// then a slower clock, the rest more work; each in wall seconds at its
// work's stretch (work_stretch), and in CPU seconds into `cpu`.
void attribute_on_cpu(const RankMeasures& rank, const RankMeasures& reference, double stretch,
                      RankAttribution& result, std::array<double, kJobCauseCount>& cpu) {
  auto& causes = result.causes;
  double on_excess = std::max(0.0, rank.compute_cpu_seconds - reference.compute_cpu_seconds);
  const double faults =
      std::min(on_excess, std::max(0.0, rank.fault_seconds - reference.fault_seconds));
  on_excess -= faults;
  double slower = 0;
  if (rank.clock_hz > 0 && reference.clock_hz > 0 && rank.clock_hz < reference.clock_hz) {
    slower =
        std::min(on_excess, rank.compute_cpu_seconds * (1.0 - rank.clock_hz / reference.clock_hz));
    on_excess -= slower;
  }
  cpu[index_of(JobCause::page_faults)] = faults;
  cpu[index_of(JobCause::slower_clock)] = slower;
  cpu[index_of(JobCause::more_work)] = on_excess;
  for (JobCause c : kOnCpu) causes[index_of(c)] = cpu[index_of(c)] * stretch;
}

// The largest cause of those worth naming: each at least its threshold
// (an on-CPU cause by its CPU seconds, `cpu`), its rank having lost at
// least as much overall, and more than what nothing explains. The two
// thresholds are of different measures: a wall-time cause under its own
// threshold does not hide an on-CPU one over its.
std::optional<JobCause> main_cause_of(const RankAttribution& result,
                                      const std::array<double, kJobCauseCount>& cpu,
                                      const CauseThresholds& thresholds) {
  std::optional<JobCause> main;
  for (JobCause cause : kJobCauses) {
    const double seconds = result.causes[index_of(cause)];
    const bool on_cpu = std::find(std::begin(kOnCpu), std::end(kOnCpu), cause) != std::end(kOnCpu);
    const double needed = on_cpu ? thresholds.on_cpu_seconds : thresholds.seconds;
    const double measured = on_cpu ? cpu[index_of(cause)] : seconds;
    // Only a rank that lost more than the reference is late: one faster
    // overall that arrived last at a few steps has nothing to explain.
    // Nor is a cause named that explains less than what nothing explains
    // (a rank blocked on I/O with a little of its own threads' time).
    const bool worth = measured >= needed && result.excess_seconds >= needed &&
                       seconds >= result.unexplained_seconds && seconds > 0;
    if (worth && (!main || seconds > result.causes[index_of(*main)])) main = cause;
  }
  return main;
}

}  // namespace

CauseThresholds cause_threshold(std::span<const RankMeasures> ranks,
                                const RankMeasures& reference) {
  return cause_threshold(fields_of(ranks), reference);
}

CauseThresholds cause_threshold(const MeasureFields& ranks, const RankMeasures& reference) {
  // 5 %: two clean vCPUs of a shared VM differ by a few per cent of their
  // compute time (the hypervisor's gaps, which the guest counts as run
  // time), and would otherwise be named more-work (docs/job.md).
  CauseThresholds thresholds{std::max(1e-3, 0.05 * reference.compute_seconds),
                             std::max(1e-3, 0.05 * reference.compute_cpu_seconds)};
  if (ranks.count >= 8) {
    // The spread of the time each rank kept the others waiting for it: its
    // compute time, on its CPU or off it; and of its CPU time in it.
    std::vector<double> wall(ranks.count), cpu(ranks.count);
    for (std::size_t i = 0; i < ranks.count; ++i) {
      wall[i] = ranks.field(i, kComputeField);
      cpu[i] = ranks.field(i, kComputeCpuField);
    }
    thresholds.seconds = std::max(thresholds.seconds, robust_spread(wall));
    thresholds.on_cpu_seconds = std::max(thresholds.on_cpu_seconds, robust_spread(cpu));
  }
  return thresholds;
}

RankAttribution attribute(const RankMeasures& rank, const RankMeasures& reference,
                          const CauseThresholds& thresholds) {
  RankAttribution result;
  result.excess_seconds = off_cpu(rank) - reference.off_cpu_seconds +
                          (rank.compute_cpu_seconds - reference.compute_cpu_seconds);
  const auto takers = taker_excess(rank, reference);
  double taken = 0;
  for (const auto& [cause, excess] : takers) taken += excess;
  const double typical = stretch_of(reference);
  const double stretch = work_stretch(rank, reference, taken);
  // At the reference's share of its CPU, its own work would have kept it
  // off the CPU in proportion: on a shared CPU more work is also more time
  // waiting for the CPU, which is the work's, not a taker's; and the extra
  // work's own stretch beyond the typical one (work_stretch) is the work's.
  const double extra_work = std::max(0.0, rank.compute_cpu_seconds - reference.compute_cpu_seconds);
  const double expected_off =
      (reference.compute_cpu_seconds > 0
           ? reference.off_cpu_seconds * (rank.compute_cpu_seconds / reference.compute_cpu_seconds)
           : reference.off_cpu_seconds) +
      (stretch - typical) * extra_work;
  attribute_off_cpu(takers, taken, std::max(0.0, off_cpu(rank) - expected_off), result);
  std::array<double, kJobCauseCount> cpu{};
  attribute_on_cpu(rank, reference, stretch, result, cpu);
  // The two parts add up to the excess; where the rank had more of its CPU
  // than the reference (the others yielding to it), its work cost it only
  // what it lost.
  double on_cpu = 0;
  for (JobCause c : kOnCpu) on_cpu += result.causes[index_of(c)];
  if (on_cpu > std::max(0.0, result.excess_seconds)) {
    const double scale = std::max(0.0, result.excess_seconds) / on_cpu;
    for (JobCause c : kOnCpu) result.causes[index_of(c)] *= scale;
  }

  result.main_cause = main_cause_of(result, cpu, thresholds);
  return result;
}

bool is_late(const RankAttribution& attribution, const RankMeasures& measures,
             const CauseThresholds& thresholds) {
  return attribution.main_cause.has_value() && measures.wait_caused_seconds >= thresholds.seconds;
}

}  // namespace corenoise
