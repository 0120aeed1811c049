// Why a rank was late, in seconds by cause: its compute time against the
// job's reference rank, split into what kept it off its CPU while it
// computed and what it did on it. Its waits are not its lateness, whether
// its MPI polled, yielded or slept in them: a waiting rank off its CPU
// (yielding to the late one on an oversubscribed node) is waiting. Pure:
// the same function runs on every rank (for the daemon's per-CPU figures)
// and on rank 0 (for the report).
//
// The reference is the job's typical rank: each figure's lower median over
// the ranks (the median for thousands of ranks; for two, the smaller one,
// the clean rank rather than the midpoint), the clock's upper median (the
// faster). Then, with C the compute wall time, R the main thread's CPU time
// in it, and s = ref(C) / ref(R) the stretch (1 with a core per rank, 8 for
// 16 ranks on 2 CPUs):
//   off-CPU excess (C-R) - ref(C-R) × R/ref(R), what kept it off beyond its
//     own work's share, shared among own-threads, other-processes,
//     interrupts and steal in proportion to each one's excess over the
//     reference, at most each one's excess; what is left is unexplained
//     (blocked: I/O, a lock, a sleep);
//   on-CPU excess R - ref(R): page-faults first (minor faults priced at the
//     cost measured at MPI_Init), then slower-clock (R × (1 - clock/ref
//     clock)), the rest more-work, each × w in wall seconds; together at
//     most the excess (C-R) - ref(C-R) + R - ref(R).
// w, the extra work's stretch, is s, or the rank's own (C - takers) / R
// where that is larger and the kernel counted it runnable for as long
// (run-queue time): the extra work ran while the others waited, and ranks
// that poll on its CPU (two ranks bound to one CPU under MPICH) take more
// of it than any reference rank saw. The off-CPU excess is then taken
// beyond ref(C-R) × R/ref(R) + (w - s) × (R - ref(R)).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>

#include "collector/job/model/rank_measures.h"
#include "daemon/control/job_causes.h"

namespace corenoise {

struct RankAttribution {
  double excess_seconds = 0;  // off-CPU plus on-CPU compute time over the reference's (may be < 0)
  std::array<double, kJobCauseCount> causes{};
  double unexplained_seconds = 0;
  // The largest cause; nullopt when it, or the excess, is under its
  // threshold (CauseThresholds), or under what nothing explains.
  std::optional<JobCause> main_cause;
};

// Each field's lower median over `ranks` (upper for the clock and the CPU
// time in calls), and off_cpu_seconds the lower median of the ranks' own
// off_cpu() (off the CPU while computing). attribute() takes the rank's
// off-CPU time from its fields and the reference's from off_cpu_seconds.
RankMeasures reference_rank(std::span<const RankMeasures> ranks);

// The ranks' measures read a field at a time: `field(rank, i)` is field i
// (as_array's order) of rank `rank` of `count`. For rank 0's summaries and
// a phase's figures made from them, which at 100,000 ranks would be 19 MB
// a copy.
struct MeasureFields {
  std::size_t count = 0;
  std::function<double(std::size_t rank, std::size_t field)> field;
};
RankMeasures reference_rank(const MeasureFields& ranks);

// The smallest cause worth naming in this job (cause_threshold): below it
// a cause is noise, not a finding.
struct CauseThresholds {
  double seconds = 0;  // the waiting caused, the off-CPU causes and their rank's loss
  // The CPU seconds of an on-CPU cause (page-faults, slower-clock,
  // more-work), and its rank's loss.
  double on_cpu_seconds = 0;
  // One threshold for every cause.
  static CauseThresholds same(double seconds) { return {seconds, seconds}; }
};

RankAttribution attribute(const RankMeasures& rank, const RankMeasures& reference,
                          const CauseThresholds& thresholds);
inline RankAttribution attribute(const RankMeasures& rank, const RankMeasures& reference,
                                 double min_seconds) {
  return attribute(rank, reference, CauseThresholds::same(min_seconds));
}

// 1 ms, 5 % of the reference's, and — with enough ranks to estimate it
// (8) — five robust standard deviations (1.4826 × MAD) over the ranks, of
// what the cause is made of: at 3,840 ranks the slowest clean rank is
// about 3.5 deviations out, so clean ranks stay unnamed (docs/job.md has
// the measured rates). For the waiting caused and the off-CPU causes, the
// compute times; for the on-CPU causes, the CPU time in them. 16 clean
// ranks sharing 2 CPUs and yielding to each other spread their compute
// times by 30 % (whoever the scheduler ran first), their CPU times by 1 %;
// and on 128 ranks sharing 2 CPUs a rank's 3 times the work is 200 % more
// CPU time but 3 % more compute time (the others yield it the CPU): in
// wall time it was hidden.
CauseThresholds cause_threshold(std::span<const RankMeasures> ranks, const RankMeasures& reference);
CauseThresholds cause_threshold(const MeasureFields& ranks, const RankMeasures& reference);

// Whether `attribution` names a late rank: a cause, and waiting caused of
// at least `thresholds.seconds`. Only a late rank has a cause to name, one
// that made the others wait: the report names it, and its loss is what
// each rank sends its node's daemon.
bool is_late(const RankAttribution& attribution, const RankMeasures& measures,
             const CauseThresholds& thresholds);

}  // namespace corenoise
