// The warm-up apart from the steady state (collector/job/model/step_math.h's
// warmup_steps, job_phases.h): where the warm-up ends, and each phase's
// late ranks attributed against its own reference.
#include "collector/job/model/job_phases.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "collector/job/model/step_math.h"

namespace corenoise {
namespace {

// Per-step caused waiting: a steady 2 ms with a little jitter.
std::vector<double> steady_steps(std::size_t n) {
  std::vector<double> caused(n);
  for (std::size_t i = 0; i < n; ++i) caused[i] = 0.002 + 0.0002 * static_cast<double>(i % 3);
  return caused;
}

TEST(WarmupSteps, AtLeastTheFirstStepWhenNothingStandsOut) {
  EXPECT_EQ(warmup_steps(steady_steps(100), 1, 100), 1);
}

TEST(WarmupSteps, AJitsSlowFirstStepsAreWarmUpRoundedToAPowerOfTwo) {
  std::vector<double> caused = steady_steps(200);
  caused[0] = 0.4;  // a compile on one rank
  caused[1] = 0.2;
  caused[2] = 0.05;
  EXPECT_EQ(warmup_steps(caused, 1, 200), 4);
}

TEST(WarmupSteps, AnEvenFirstBarrierDoesNotHideTheFirstComputeStep) {
  std::vector<double> caused = steady_steps(300);
  caused[1] = 0.05;  // step 2: the first step after the program's set-up barrier
  EXPECT_EQ(warmup_steps(caused, 1, 300), 2);
}

TEST(WarmupSteps, ASpikeAfterTwoSettledStepsIsTheSteadyStates) {
  std::vector<double> caused = steady_steps(300);
  caused[10] = 0.5;
  EXPECT_EQ(warmup_steps(caused, 1, 300), 1);
}

TEST(WarmupSteps, MergedBinsKeepTheWarmUpAWholeNumberOfBins) {
  std::vector<double> caused = steady_steps(100);  // 4 steps per bin
  for (double& c : caused) c *= 4;
  caused[0] = 1.0;
  EXPECT_EQ(warmup_steps(caused, 4, 400), 4);
  caused[1] = 0.5;  // steps 5-8 too
  EXPECT_EQ(warmup_steps(caused, 4, 400), 8);
  caused[2] = 0.5;  // steps 9-12: rounded up to 16
  EXPECT_EQ(warmup_steps(caused, 4, 400), 16);
}

TEST(WarmupSteps, StepsThatNeverSettleEarlyLeaveTheFirstStepAsTheWarmUp) {
  std::vector<double> caused = steady_steps(4000);
  for (std::size_t i = 0; i < 1500; ++i) caused[i] = 0.01;  // past kMaxWarmupSteps
  EXPECT_EQ(warmup_steps(caused, 1, 4000), 1);
  EXPECT_EQ(warmup_steps(steady_steps(10), 2048, 20480), 0);  // no snapshot ends such a bin
}

TEST(WarmupSteps, StepsThatAlternateInKindSettleAtTheSteadyStatesHighSteps) {
  // A barrier after the compute (5-27 ms caused) and a small Allreduce
  // (0.1 ms), as the story's script does: the median falls between them.
  std::vector<double> caused;
  for (int i = 0; i < 120; ++i)
    caused.push_back(i % 2 == 1 ? 0.0001 : 0.005 + 0.022 * ((i * 7919) % 13 == 0));
  caused[1] = 0.068;  // the first compute step's barrier, one rank with twice the work
  caused[3] = 0.015;  // ordinary noise of the early steps
  EXPECT_EQ(warmup_steps(caused, 1, 120), 2);
  // One hiccup of the host in the steady state as large as the first
  // step's skew does not hide it.
  caused[100] = 0.07;
  EXPECT_EQ(warmup_steps(caused, 1, 120), 2);
}

TEST(WarmupSteps, NoSplitWithoutASteadyStateAndTheFirstStepWhenNeverSettledEarly) {
  EXPECT_EQ(warmup_steps(std::vector<double>{0.5, 0.1, 0.1}, 1, 3), 0);
  std::vector<double> caused(10, 0.5);  // unsettled past half the job
  for (std::size_t i = 5; i < 10; ++i) caused[i] = 0.001;
  EXPECT_EQ(warmup_steps(caused, 1, 10), 1);
}

RankRecord record(int rank, double compute_cpu, double warmup_compute_cpu, double caused,
                  double warmup_caused) {
  RankRecord r;
  r.rank = rank;
  r.host = "n";
  RankMeasures& m = r.measures;
  m.compute_seconds = m.compute_cpu_seconds = compute_cpu;
  m.wait_seconds = 0.5;
  m.wait_cpu_seconds = 0.5;
  m.wait_caused_seconds = caused;
  m.steps = 100;
  RankMeasures w;
  w.compute_seconds = w.compute_cpu_seconds = warmup_compute_cpu;
  w.wait_seconds = 0.05;
  w.wait_cpu_seconds = 0.05;
  w.wait_caused_seconds = warmup_caused;
  w.steps = 2;
  r.warmup = w;
  return r;
}

TEST(JobPhases, AFirstStepSkewIsNamedInTheWarmUpAndNotInTheSteadyState) {
  // Rank 1 computed 0.2 s more in the first two steps, and the same after.
  const std::vector<RankRecord> records = {record(0, 10.0, 0.2, 0.0, 0.0),
                                           record(1, 10.2, 0.4, 0.2, 0.2),
                                           record(2, 10.0, 0.2, 0.0, 0.0)};
  const std::vector<JobPhase> phases = job_phases(summaries_of(records), 2, 100);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].name, "warm-up");
  EXPECT_EQ(phases[0].last_step, 2);
  ASSERT_EQ(phases[0].late_ranks.size(), 1u);
  EXPECT_EQ(phases[0].late_ranks[0].rank, 1);
  EXPECT_EQ(phases[0].late_ranks[0].cause, JobCause::more_work);
  EXPECT_NEAR(phases[0].late_ranks[0].cause_seconds, 0.2, 1e-9);
  EXPECT_EQ(phases[1].name, "steady state");
  EXPECT_EQ(phases[1].first_step, 3);
  EXPECT_TRUE(phases[1].late_ranks.empty());
  EXPECT_NEAR(phases[1].wait_seconds, 3 * 0.45, 1e-9);

  const JobStep step = step_in_phases(2, 1, 0.2, 1, "MPI_Barrier", "story.py:74 in main", phases);
  EXPECT_EQ(step.phase, "warm-up");
  ASSERT_TRUE(step.cause.has_value());
  EXPECT_EQ(*step.cause, JobCause::more_work);
  const JobStep later = step_in_phases(50, 1, 0.01, 0, "MPI_Barrier", "s", phases);
  EXPECT_EQ(later.phase, "steady state");
  EXPECT_FALSE(later.cause.has_value());
}

TEST(JobPhases, NoPhasesWhenARecordLacksItsWarmUpOrKeptItElsewhere) {
  std::vector<RankRecord> records = {record(0, 1, 0.1, 0, 0), record(1, 1, 0.1, 0, 0)};
  EXPECT_EQ(job_phases(summaries_of(records), 2, 100).size(), 2u);
  records[1].warmup->steps = 4;  // a rank that found another warm-up
  EXPECT_TRUE(job_phases(summaries_of(records), 2, 100).empty());
  records[1].warmup.reset();  // a record from a spill file
  EXPECT_TRUE(job_phases(summaries_of(records), 2, 100).empty());
  EXPECT_TRUE(job_phases(summaries_of({record(0, 1, 0.1, 0, 0)}), 0, 100).empty());
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// What-if (step_math.h's savings_by_rank): at each bin, the last to arrive
// (least wait) would have let the others go when the next-to-last arrived.
TEST(SavingsByRank, EachLastArriverSavesTheNextToLastsWaitLessItsOwn) {
  const std::vector<double> minimum = {0.0, 0.1, 0.0, 0.2, 0.0};
  const std::vector<int> last = {1, 3, 1, 0, 2};
  const std::vector<double> second = {0.5, 0.4, 0.25, 0.2, std::numeric_limits<double>::infinity()};
  const auto saving = savings_by_rank(minimum, last, second);
  // Rank 1: 0.5 + 0.25; rank 3: 0.3; rank 0 tied with the next (0);
  // rank 2 alone at its bin (no other rank: nothing).
  ASSERT_EQ(saving.size(), 2u);
  EXPECT_EQ(saving[0].first, 1);
  EXPECT_DOUBLE_EQ(saving[0].second, 0.75);
  EXPECT_EQ(saving[1].first, 3);
  EXPECT_NEAR(saving[1].second, 0.3, 1e-12);
}

}  // namespace
}  // namespace corenoise
