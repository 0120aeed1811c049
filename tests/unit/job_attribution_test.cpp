// collector/job/model/attribution.h: the job's reference rank, why one rank was
// late, and the smallest cause worth naming. Values are binary fractions,
// so that the arithmetic is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "collector/job/model/attribution.h"

namespace corenoise {
namespace {

double cause(const RankAttribution& a, JobCause c) { return a.causes[index_of(c)]; }

// A clean rank: 8 s computing, all of it on its CPU (a core of its own),
// at 2 GHz.
RankMeasures clean() {
  RankMeasures m;
  m.elapsed_seconds = 20;
  m.compute_seconds = 8;
  m.compute_cpu_seconds = 8;
  m.wait_seconds = 12;
  m.own_threads_seconds = 0.25;
  m.other_processes_seconds = 0.25;
  m.interrupt_seconds = 0.125;
  m.steal_seconds = 0;
  m.fault_seconds = 0.0625;
  m.clock_hz = 2e9;
  m.off_cpu_seconds = off_cpu(m);
  return m;
}

void expect_only(const RankAttribution& a, JobCause expected, double seconds) {
  for (JobCause c : kJobCauses) {
    EXPECT_DOUBLE_EQ(cause(a, c), c == expected ? seconds : 0.0) << to_string(c);
  }
}

TEST(ReferenceRankTest, LowerMedianOfEachFieldUpperMedianOfTheClock) {
  std::vector<RankMeasures> ranks(4);
  const double compute[] = {4, 1, 3, 2};
  const double wait[] = {10, 40, 30, 20};
  const double clock[] = {1e9, 4e9, 2e9, 3e9};
  for (int i = 0; i < 4; ++i) {
    ranks[i].compute_seconds = compute[i];
    ranks[i].wait_seconds = wait[i];
    ranks[i].clock_hz = clock[i];
    ranks[i].own_threads_seconds = i == 1 ? 5.0 : 0.0;  // one noisy rank does not move it
  }
  const RankMeasures ref = reference_rank(ranks);
  EXPECT_DOUBLE_EQ(ref.compute_seconds, 2);  // of 1 2 3 4
  EXPECT_DOUBLE_EQ(ref.wait_seconds, 20);    // of 10 20 30 40: each field on its own
  EXPECT_DOUBLE_EQ(ref.clock_hz, 3e9);       // of 1 2 3 4 GHz: the faster middle
  EXPECT_DOUBLE_EQ(ref.own_threads_seconds, 0);
}

TEST(ReferenceRankTest, TwoRanksGiveTheCleanOne) {
  RankMeasures slow = clean(), fast = clean();
  slow.compute_seconds = 10;
  slow.compute_cpu_seconds = 9;
  slow.own_threads_seconds = 2;
  slow.clock_hz = 1.5e9;
  const std::vector<RankMeasures> ranks = {slow, fast};
  const RankMeasures ref = reference_rank(ranks);
  EXPECT_DOUBLE_EQ(ref.compute_seconds, 8);
  EXPECT_DOUBLE_EQ(ref.compute_cpu_seconds, 8);
  EXPECT_DOUBLE_EQ(ref.own_threads_seconds, 0.25);
  EXPECT_DOUBLE_EQ(ref.clock_hz, 2e9);
  // In the other order too.
  const std::vector<RankMeasures> swapped = {fast, slow};
  EXPECT_DOUBLE_EQ(reference_rank(swapped).compute_seconds, 8);
  EXPECT_DOUBLE_EQ(reference_rank(swapped).clock_hz, 2e9);
}

TEST(ReferenceRankTest, OddCountsAndNone) {
  std::vector<RankMeasures> ranks(3);
  ranks[0].compute_seconds = 1;
  ranks[1].compute_seconds = 3;
  ranks[2].compute_seconds = 2;
  ranks[0].clock_hz = 1e9;
  ranks[1].clock_hz = 3e9;
  ranks[2].clock_hz = 2e9;
  EXPECT_DOUBLE_EQ(reference_rank(ranks).compute_seconds, 2);
  EXPECT_DOUBLE_EQ(reference_rank(ranks).clock_hz, 2e9);
  const std::vector<RankMeasures> one = {clean()};
  EXPECT_DOUBLE_EQ(reference_rank(one).compute_seconds, 8);
  const RankMeasures none = reference_rank(std::span<const RankMeasures>());
  for (std::size_t i = 0; i < kRankMeasureCount; ++i) EXPECT_EQ(as_array(none)[i], 0.0);
}

TEST(AttributeTest, TheReferenceItselfHasNoCause) {
  const RankAttribution a = attribute(clean(), clean(), 1e-3);
  EXPECT_DOUBLE_EQ(a.excess_seconds, 0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  for (double s : a.causes) EXPECT_DOUBLE_EQ(s, 0);
  EXPECT_FALSE(a.main_cause);
}

TEST(AttributeTest, OwnThreadsTakeTheOffCpuExcess) {
  // One more second computing, the same CPU time: 1 s off its CPU, while
  // its own threads ran 2 s more on its CPUs than the reference's.
  RankMeasures rank = clean();
  rank.compute_seconds = 9;
  rank.own_threads_seconds = 2.25;
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(a.excess_seconds, 1);
  expect_only(a, JobCause::own_threads, 1.0);  // at most the off-CPU excess
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  ASSERT_TRUE(a.main_cause);
  EXPECT_EQ(*a.main_cause, JobCause::own_threads);
}

TEST(AttributeTest, TakersShareTheOffCpuExcessInProportion) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;                   // off-CPU excess 1 s
  rank.own_threads_seconds = 0.25 + 1.5;      // 1.5 s over the reference
  rank.other_processes_seconds = 0.25 + 0.5;  // 0.5 s over
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  // 2 s taken of 1 s: each gets half of its excess.
  EXPECT_DOUBLE_EQ(cause(a, JobCause::own_threads), 0.75);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::other_processes), 0.25);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::interrupts), 0);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  EXPECT_EQ(a.main_cause, JobCause::own_threads);
}

TEST(AttributeTest, TakersUnderTheExcessLeaveTheRestUnexplained) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;               // off-CPU excess 1 s
  rank.interrupt_seconds = 0.125 + 0.25;  // 0.25 s over
  rank.steal_seconds = 0.125;             // 0.125 s over
  rank.own_threads_seconds = 0;           // under the reference: no share
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::interrupts), 0.25);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::steal), 0.125);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::own_threads), 0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0.625);
  // What nothing explains (0.625 s) outweighs the largest cause (0.25 s):
  // no cause is named for it.
  EXPECT_EQ(a.main_cause, std::nullopt);
  rank.interrupt_seconds = 0.125 + 0.75;                     // now 0.75 s over: the off-CPU
  const RankAttribution b = attribute(rank, clean(), 1e-3);  // excess is shared
  EXPECT_EQ(b.main_cause, JobCause::interrupts);
}

TEST(AttributeTest, OffCpuWithNoTakerIsUnexplained) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;  // blocked 1 s more (I/O, a lock), nothing ran instead
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  for (double s : a.causes) EXPECT_DOUBLE_EQ(s, 0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 1.0);
  EXPECT_FALSE(a.main_cause);  // unexplained is not a cause
}

TEST(AttributeTest, MoreCpuTimeAtTheSameClockIsMoreWork) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;
  rank.compute_cpu_seconds = 9;  // all of the second on its CPU
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  expect_only(a, JobCause::more_work, 1.0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  // A faster clock than the reference's is not a cause either.
  rank.clock_hz = 3e9;
  expect_only(attribute(rank, clean(), 1e-3), JobCause::more_work, 1.0);
}

TEST(AttributeTest, PageFaultsComeFirstOnTheCpu) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;
  rank.compute_cpu_seconds = 9;
  rank.fault_seconds = 0.0625 + 0.25;
  RankAttribution a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::page_faults), 0.25);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0.75);
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  // Never more than the on-CPU excess.
  rank.fault_seconds = 4;
  a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::page_faults), 1.0);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0);
}

TEST(AttributeTest, ALowerClockIsSlowerClockOfItsCpuTime) {
  RankMeasures rank = clean();
  rank.compute_seconds = 9;
  rank.compute_cpu_seconds = 9;  // 1 s more on its CPU
  rank.clock_hz = 1.875e9;       // 15/16 of the reference's
  RankAttribution a = attribute(rank, clean(), 1e-3);
  // R × (1 - clock/ref) = 9 × 1/16; the rest is more work.
  EXPECT_DOUBLE_EQ(cause(a, JobCause::slower_clock), 9.0 / 16);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 1.0 - 9.0 / 16);
  EXPECT_EQ(a.main_cause, JobCause::slower_clock);
  // Much slower: capped at the on-CPU excess.
  rank.clock_hz = 1e9;
  a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::slower_clock), 1.0);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0);
  // No clock measured: nothing is put on the clock.
  rank.clock_hz = 0;
  expect_only(attribute(rank, clean(), 1e-3), JobCause::more_work, 1.0);
}

TEST(AttributeTest, NoMainCauseUnderTheThreshold) {
  RankMeasures rank = clean();
  rank.compute_seconds = 8 + 0.0009765625;  // 2^-10 s more, all on its CPU
  rank.compute_cpu_seconds = 8 + 0.0009765625;
  RankAttribution a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0.0009765625);
  EXPECT_FALSE(a.main_cause);
  a = attribute(rank, clean(), 0.0009765625);  // reaching it is enough
  EXPECT_EQ(a.main_cause, JobCause::more_work);
}

TEST(AttributeTest, AFasterRankHasNegativeExcessAndNoCause) {
  RankMeasures rank = clean();
  rank.compute_seconds = 7;
  rank.compute_cpu_seconds = 7;
  const RankAttribution a = attribute(rank, clean(), 1e-3);
  EXPECT_DOUBLE_EQ(a.excess_seconds, -1);
  for (double s : a.causes) EXPECT_DOUBLE_EQ(s, 0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  EXPECT_FALSE(a.main_cause);
}

// The story of issue 35 at 16 ranks on 2 CPUs: the waiting ranks yield
// inside their waits (Open MPI's mpi_yield_when_idle, an oversubscribed
// node), so each is off its CPU there for most of its wait, while the
// late rank, with 3 times the work, hardly waits. Its lateness is its
// extra work alone; the others' time off their CPUs inside their waits is
// theirs, and neither hides it nor is taken for lateness.
TEST(AttributeTest, OffCpuTimeInsideWaitsIsNotLateness) {
  std::vector<RankMeasures> ranks;
  for (int i = 0; i < 16; ++i) {
    RankMeasures m = clean();
    m.compute_seconds = 2;  // shared CPUs: a quarter of it on its own
    m.compute_cpu_seconds = 0.5;
    m.wait_seconds = 4;
    m.wait_cpu_seconds = 0.25;  // yielding: off its CPU 3.75 s of the 4
    m.off_cpu_seconds = off_cpu(m);
    ranks.push_back(m);
  }
  RankMeasures& late = ranks[5];
  // 3 times the work, 1.5 s on its CPU: 0.5 s of it shared as the others'
  // (2 s), the rest nearly alone, the others yielding to it (1.25 s).
  late.compute_seconds = 3.25;
  late.compute_cpu_seconds = 1.5;
  late.wait_seconds = 0.25;
  late.wait_cpu_seconds = 0.25;
  late.off_cpu_seconds = off_cpu(late);
  const RankMeasures ref = reference_rank(ranks);
  EXPECT_DOUBLE_EQ(ref.off_cpu_seconds, 1.5);  // off its CPU while computing only
  const CauseThresholds threshold = cause_threshold(ranks, ref);
  const RankAttribution a = attribute(late, ref, threshold);
  // Its extra second of work would have taken 4 s at the others' quarter
  // of a CPU (stretch 4: 2 s computing per 0.5 s of work); it took 1.25 s,
  // the others yielding to it: its lateness is all more work, 1.25 s, and
  // none of its time off the CPU is a taker's. Counting the others' 3.75 s
  // off their CPUs inside their waits into the reference, as before issue
  // 35, left it an excess of -2.5 s and nobody named.
  EXPECT_DOUBLE_EQ(a.excess_seconds, 1.25);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 1.25);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0);
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  // The clean ranks are the reference: nothing to explain.
  EXPECT_FALSE(attribute(ranks[0], ref, threshold).main_cause);
}

// Two ranks bound to one CPU under MPICH, which polls in its waits: the
// late rank's extra work runs while the other polls beside it on that CPU,
// at half of it, where the reference computed with little of its CPU lost
// (stretch 1.25). The rank's own stretch, 2, is its extra work's, as the
// kernel's run-queue time vouches; a rank as long off its CPU but not
// runnable for it (blocked) gets only the typical stretch.
TEST(AttributeTest, ExtraWorkBesideAPollingRankIsStretchedByIt) {
  RankMeasures ref;
  ref.compute_seconds = 1.25;
  ref.compute_cpu_seconds = 1;
  ref.off_cpu_seconds = off_cpu(ref);
  RankMeasures late = ref;
  late.compute_cpu_seconds = 1.5;  // half as much work again
  late.compute_seconds = 3;        // off its CPU 1.5 s of it: stretch 2
  late.run_queue_seconds = 4;      // runnable for all of that (and in its waits)
  RankAttribution a = attribute(late, ref, 1e-3);
  // 0.5 s of work × 2; off its CPU beyond 0.25 × 1.5 + (2 - 1.25) × 0.5.
  EXPECT_DOUBLE_EQ(a.excess_seconds, 1.75);
  expect_only(a, JobCause::more_work, 1.0);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 0.75);
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  // Runnable for only 0.75 s: stretch 1.5 at most, and what is left off
  // its CPU outweighs the work.
  late.run_queue_seconds = 0.75;
  a = attribute(late, ref, 1e-3);
  expect_only(a, JobCause::more_work, 0.75);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 1.0);
  EXPECT_FALSE(a.main_cause);
  // Not runnable at all (blocked): the typical stretch alone.
  late.run_queue_seconds = 0;
  a = attribute(late, ref, 1e-3);
  expect_only(a, JobCause::more_work, 0.625);
  EXPECT_DOUBLE_EQ(a.unexplained_seconds, 1.125);
  EXPECT_FALSE(a.main_cause);
}

// The two thresholds are of different measures: a larger off-CPU cause
// under the wall threshold does not hide an on-CPU cause over its own.
TEST(AttributeTest, ACauseUnderItsThresholdHidesNoOtherOverItsOwn) {
  RankMeasures rank = clean();
  rank.compute_cpu_seconds = 8.25;  // 0.25 s more work
  rank.compute_seconds = 8.75;      // and 0.5 s more off its CPU,
  rank.own_threads_seconds = 0.75;  // its own threads' (0.5 s over)
  const CauseThresholds t{1.75, 0.125};
  const RankAttribution a = attribute(rank, clean(), t);
  EXPECT_DOUBLE_EQ(cause(a, JobCause::own_threads), 0.5);  // the largest, under 1.75
  EXPECT_DOUBLE_EQ(cause(a, JobCause::more_work), 0.25);   // 0.25 CPU seconds, over 0.125
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  // Both over their thresholds: the larger.
  EXPECT_EQ(attribute(rank, clean(), CauseThresholds{0.25, 0.125}).main_cause,
            JobCause::own_threads);
}

std::vector<RankMeasures> computing(const std::vector<double>& seconds) {
  std::vector<RankMeasures> ranks;
  for (double s : seconds) {
    RankMeasures m;
    m.compute_seconds = s;
    ranks.push_back(m);
  }
  return ranks;
}

TEST(CauseThresholdTest, OneMillisecondFloor) {
  const auto ranks = computing({0.01, 0.01, 0.02});
  EXPECT_DOUBLE_EQ(cause_threshold(ranks, reference_rank(ranks)).seconds,
                   1e-3);  // 5 % would be 0.5 ms
}

TEST(CauseThresholdTest, FivePercentOfTheReferenceCompute) {
  const auto ranks = computing({100, 100, 300, 50});
  const RankMeasures ref = reference_rank(ranks);  // 100 s
  EXPECT_DOUBLE_EQ(cause_threshold(ranks, ref).seconds, 5.0);
  // The spread does not count under 8 ranks: 7 ranks of 1..7 s.
  const auto seven = computing({1, 2, 3, 4, 5, 6, 7});
  EXPECT_DOUBLE_EQ(cause_threshold(seven, reference_rank(seven)).seconds, 0.05 * 4);
}

TEST(CauseThresholdTest, FiveRobustDeviationsFromEightRanks) {
  // 1..8 s: the median 4.5, deviations 3.5 2.5 1.5 0.5 0.5 1.5 2.5 3.5,
  // whose median is 2 (probe/stats.h's mad).
  const auto eight = computing({1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_DOUBLE_EQ(cause_threshold(eight, reference_rank(eight)).seconds, 5 * 1.4826 * 2);
  // Without spread, the 5 % term is left.
  const auto same = computing({10, 10, 10, 10, 10, 10, 10, 10.5});
  EXPECT_DOUBLE_EQ(cause_threshold(same, reference_rank(same)).seconds, 0.5);
}

// Each kind of cause against the spread of what it is made of: 16 clean
// ranks sharing 2 CPUs, yielding to each other, computed 1 to 2 s for the
// same 0.5 s of CPU work (whom the scheduler ran first). The rank with
// half as much work again (0.75 s of CPU, 2 s computing, the others
// yielding to it) is inside the first spread, and far outside the second.
TEST(CauseThresholdTest, OnCpuCausesAgainstTheSpreadOfCpuTime) {
  std::vector<RankMeasures> ranks;
  for (int i = 0; i < 16; ++i) {
    RankMeasures m;
    m.compute_seconds = 1 + i / 16.0;
    m.compute_cpu_seconds = i % 2 == 0 ? 0.5 : 0.5 + 1.0 / 64;
    m.off_cpu_seconds = off_cpu(m);
    ranks.push_back(m);
  }
  RankMeasures& late = ranks[15];
  late.compute_seconds = 2;
  late.compute_cpu_seconds = 0.75;
  late.off_cpu_seconds = off_cpu(late);
  late.wait_caused_seconds = 8;
  const RankMeasures ref = reference_rank(ranks);
  const CauseThresholds t = cause_threshold(ranks, ref);
  // Compute times 1 .. 1 14/16, and 2: MAD 1/4 s.
  EXPECT_DOUBLE_EQ(t.seconds, 5 * 1.4826 * 0.25);
  // CPU times 0.5 or 0.515625, and 0.75: MAD 1/128 s, over 5 % of the
  // reference's 0.5 s.
  EXPECT_DOUBLE_EQ(t.on_cpu_seconds, 5 * 1.4826 / 128);
  const RankAttribution a = attribute(late, ref, t);
  EXPECT_LT(a.causes[index_of(JobCause::more_work)], t.seconds);  // hidden in the wall spread
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  EXPECT_TRUE(is_late(a, late, t));
  // With one threshold for all, the wall spread's, nobody was named.
  EXPECT_FALSE(attribute(late, ref, t.seconds).main_cause);
  // A clean rank at the end of the wall spread has nothing on its CPU to
  // explain, and its time off the CPU is under the wall threshold.
  EXPECT_FALSE(attribute(ranks[14], ref, t).main_cause);
}

// 128 ranks sharing 2 CPUs, yielding: the rank with 3 times the work does
// its extra work nearly alone, the others yielding it the CPU, so it
// computed 3 % longer than the others (0.625 s of 19 s), under 5 % of the
// compute time, but 200 % more on its CPU: judged by its CPU time, named.
TEST(CauseThresholdTest, TheFloorOfAnOnCpuCauseIsOfTheCpuTime) {
  std::vector<RankMeasures> ranks(128);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].compute_seconds = 19 + (i % 4) / 8.0;  // a spread under the floor
    ranks[i].compute_cpu_seconds = 0.3125;
    ranks[i].off_cpu_seconds = off_cpu(ranks[i]);
  }
  RankMeasures& late = ranks[127];
  late.compute_seconds = 19.625;
  late.compute_cpu_seconds = 0.9375;
  late.off_cpu_seconds = off_cpu(late);
  late.wait_caused_seconds = 76;
  const RankMeasures ref = reference_rank(ranks);
  const CauseThresholds t = cause_threshold(ranks, ref);
  EXPECT_DOUBLE_EQ(t.on_cpu_seconds, 0.05 * 0.3125);
  const RankAttribution a = attribute(late, ref, t);
  EXPECT_LT(a.excess_seconds, 0.05 * ref.compute_seconds);
  EXPECT_EQ(a.main_cause, JobCause::more_work);
  EXPECT_TRUE(is_late(a, late, t));
  // Against 5 % of the compute time it was not.
  EXPECT_FALSE(attribute(late, ref, t.seconds).main_cause);
}

}  // namespace
}  // namespace corenoise
