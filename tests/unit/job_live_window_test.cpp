// A live epoch's own window (collector/job/model/live_window.h): the ranks'
// figures since the previous epoch, judged on their own, name a rank late
// in the last minute of a long job that the job so far does not yet name.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "collector/job/model/job_selection.h"
#include "collector/job/model/live_window.h"

namespace corenoise {
namespace {

constexpr int kRanks = 16;

// A clean rank over `seconds` of a bulk-synchronous job: 40 % computing
// on its CPU, the rest waiting, a spread of a few ms between ranks.
RankMeasures clean(double seconds, int rank) {
  const double jitter = std::fmod(rank * 0.618, 1.0);
  RankMeasures m;
  m.elapsed_seconds = seconds;
  m.compute_seconds = 0.4 * seconds + 0.004 * jitter;
  m.compute_cpu_seconds = 0.395 * seconds + 0.004 * jitter;
  m.off_cpu_seconds = off_cpu(m);
  m.wait_seconds = 0.6 * seconds;
  m.wait_cpu_seconds = 0.6 * seconds;
  m.calls = 10 * seconds;
  m.steps = 5 * seconds;
  m.clock_hz = 2e9;
  m.wait_caused_seconds = 0.001 * jitter;
  return m;
}

RankMeasures plus(const RankMeasures& a, const RankMeasures& b) {
  RankMeasures sum;
  for (std::size_t i = 0; i < kRankMeasureCount; ++i)
    as_array(sum)[i] = as_array(a)[i] + as_array(b)[i];
  sum.clock_hz = b.clock_hz;
  return sum;
}

// `rank` kept off its CPU by another process for `lost` s of a window:
// the others waited that long for it at each step.
void noisy(RankMeasures& m, double lost) {
  m.compute_seconds += lost;
  m.other_processes_seconds += lost;
  m.off_cpu_seconds += lost;
  m.wait_seconds -= lost;
  m.wait_cpu_seconds -= lost;
  m.wait_caused_seconds += lost * (kRanks - 1);
}

std::vector<RankSummary> summaries(const std::vector<RankMeasures>& measures) {
  std::vector<RankSummary> out;
  for (std::size_t r = 0; r < measures.size(); ++r) {
    RankSummary s;
    s.measures = measures[r];
    s.rank = static_cast<double>(r);
    s.node = static_cast<double>(r / 8 * 8);
    out.push_back(s);
  }
  return out;
}

// An hour of clean job, then a 30 s window in which rank 5 lost 30 % of
// its CPU to another process.
struct HourThenNoise {
  std::vector<RankSummary> hour, now;
  HourThenNoise() {
    std::vector<RankMeasures> before, after;
    for (int r = 0; r < kRanks; ++r) {
      before.push_back(clean(3600, r));
      RankMeasures window = clean(30, r);
      if (r == 5) noisy(window, 9);
      after.push_back(plus(before.back(), window));
    }
    hour = summaries(before);
    now = summaries(after);
  }
};

// Every summary's window as a summary of its own, judged as the job is:
// what judge_windows must agree with, without the copy.
std::vector<RankSummary> copied_windows(const std::vector<RankSummary>& now,
                                        const LiveBaseline& baseline) {
  std::vector<RankSummary> out(now);
  for (RankSummary& s : out) s.measures = baseline.window_of(s);
  return out;
}

TEST(LiveWindow, ARankLateInTheLastWindowOfAnHourIsNamedThereAndNotYetOverTheJob) {
  const HourThenNoise job;
  // Over the job so far, 9 s of an hour is not yet worth naming.
  const JobJudgement so_far = judge_ranks(job.now);
  EXPECT_TRUE(worst_ranks(job.now, so_far).empty());
  LiveBaseline baseline;
  baseline.keep(job.hour, kRanks);
  EXPECT_NEAR(baseline.window_of(job.now[5]).elapsed_seconds, 30, 1e-9);
  const JobJudgement judged = judge_windows(job.now, baseline);
  const std::vector<JobFacts::Live::WindowRank> named = window_ranks(job.now, baseline, judged);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].rank, 5);
  EXPECT_EQ(named[0].cause, JobCause::other_processes);
  EXPECT_NEAR(named[0].wait_caused_seconds, 9 * (kRanks - 1), 0.01);
  // The same judgement as of the windows copied.
  const std::vector<RankSummary> copies = copied_windows(job.now, baseline);
  const JobJudgement of_copies = judge_ranks(copies);
  EXPECT_EQ(judged.late, of_copies.late);
  EXPECT_EQ(judged.threshold.seconds, of_copies.threshold.seconds);
  for (std::size_t i = 0; i < kRankMeasureCount; ++i)
    EXPECT_EQ(as_array(judged.reference)[i], as_array(of_copies.reference)[i]) << i;
}

TEST(LiveWindow, ACleanWindowNamesNobodyAndTheNextWindowStartsWhereItEnded) {
  const HourThenNoise job;
  // The first epoch's window, with nothing kept: the hour itself.
  const LiveBaseline first;
  EXPECT_NEAR(first.window_of(job.hour[3]).elapsed_seconds, 3600, 1e-9);
  EXPECT_TRUE(window_ranks(job.hour, first, judge_windows(job.hour, first)).empty());
  // After the noisy window is kept, a clean one names nobody.
  LiveBaseline baseline;
  baseline.keep(job.now, kRanks);
  std::vector<RankMeasures> later;
  for (int r = 0; r < kRanks; ++r)
    later.push_back(plus(job.now[static_cast<std::size_t>(r)].measures, clean(30, r)));
  const std::vector<RankSummary> now = summaries(later);
  EXPECT_NEAR(baseline.window_of(now[5]).other_processes_seconds, 0, 1e-9);
  EXPECT_TRUE(window_ranks(now, baseline, judge_windows(now, baseline)).empty());
}

TEST(LiveWindow, AFigureThatFellIsZeroAndTheClockIsTheLaterReading) {
  RankMeasures before = clean(100, 1), now = clean(130, 1);
  before.wait_caused_seconds = 2;  // recomputed lower (the window is not judged then)
  now.wait_caused_seconds = 1.5;
  now.clock_hz = 1.5e9;
  const RankMeasures since = measures_since(now, before);
  EXPECT_EQ(since.wait_caused_seconds, 0);
  EXPECT_EQ(since.clock_hz, 1.5e9);
  EXPECT_NEAR(since.elapsed_seconds, 30, 1e-9);
  // A rank the baseline never had (it had not reported): its whole job.
  LiveBaseline baseline;
  baseline.keep(summaries({clean(100, 0)}), 2);
  const std::vector<RankSummary> both = summaries({now, now});
  EXPECT_NEAR(baseline.window_of(both[0]).elapsed_seconds, 30, 1e-9);
  EXPECT_NEAR(baseline.window_of(both[1]).elapsed_seconds, 130, 1e-9);
}

// Bins of one size from epoch to epoch, or the first epoch: judged; the
// first after a merge, or where the steps were not compared: not.
TEST(LiveWindow, AWindowIsJudgedOnlyBetweenEpochsOfOneBinSize) {
  LiveBaseline baseline;
  EXPECT_TRUE(baseline.window_known(1));
  EXPECT_FALSE(baseline.window_known(0));
  baseline.epochs = 3;
  baseline.steps_per_bin = 1;
  EXPECT_TRUE(baseline.window_known(1));
  EXPECT_FALSE(baseline.window_known(2));
  baseline.steps_per_bin = 0;
  EXPECT_FALSE(baseline.window_known(2));
}

}  // namespace
}  // namespace corenoise
