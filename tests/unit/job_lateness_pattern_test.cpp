// Chronic or one-off (collector/job/model/lateness_pattern.h): rows of a
// late rank's lateness with the host's jitter and spikes, and what each
// must read as.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "collector/job/model/lateness_pattern.h"

namespace corenoise {
namespace {

constexpr long kStepsPerColumn = 60;    // a 10-minute job of 10 ms steps
constexpr std::size_t kColumns = 1000;  // step_math.h's widest row
constexpr long kSteps = kStepsPerColumn * static_cast<long>(kColumns);
constexpr double kElapsed = 600;
constexpr double kThreshold = 0.5e-3;  // late per step

// A clean row: 50 us of jitter per step, a 5 ms spike in one column of
// 200 (the host), summed over a column's steps; late (2 ms a step more)
// in [late_from, late_to).
std::vector<float> row(std::size_t late_from, std::size_t late_to, unsigned seed = 1) {
  std::mt19937 random(seed);
  std::exponential_distribution<double> jitter(1 / 50e-6);
  std::vector<float> out;
  for (std::size_t c = 0; c < kColumns; ++c) {
    double per_step = jitter(random);
    if (random() % 200 == 0) per_step += 5e-3 / kStepsPerColumn;
    if (c >= late_from && c < late_to) per_step += 2e-3;
    out.push_back(static_cast<float>(per_step * kStepsPerColumn));
  }
  return out;
}

LatenessPattern pattern_of(const std::vector<float>& r) {
  return lateness_pattern(r, kStepsPerColumn, kSteps, kElapsed, kThreshold).value();
}

long step_at_column(std::size_t c) { return static_cast<long>(c) * kStepsPerColumn + 1; }

TEST(LatenessPattern, LateFromTheStartToTheEndIsChronicFromStepOne) {
  const LatenessPattern p = pattern_of(row(0, kColumns));
  EXPECT_EQ(p.kind, LatenessPattern::Kind::chronic);
  EXPECT_EQ(p.onset_step, 1);
  EXPECT_DOUBLE_EQ(p.onset_seconds, 0);
  EXPECT_GT(p.late_share, 0.99);
}

TEST(LatenessPattern, LateFromThreeMinutesInIsChronicSinceThen) {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
    const LatenessPattern p = pattern_of(row(300, kColumns, seed));
    EXPECT_EQ(p.kind, LatenessPattern::Kind::chronic) << "seed " << seed;
    // Within one column of the change, in steps and in seconds.
    EXPECT_LE(std::labs(p.onset_step - step_at_column(300)), kStepsPerColumn) << "seed " << seed;
    EXPECT_NEAR(p.onset_seconds, 180, 0.6 + 1e-9) << "seed " << seed;
    EXPECT_NEAR(p.late_share, 0.7, 0.01) << "seed " << seed;
    EXPECT_LE(p.late_share_low, p.late_share);
    EXPECT_GE(p.late_share_high, p.late_share);
  }
}

TEST(LatenessPattern, LateFromThreeToSixMinutesIsABurstWithItsStartAndEnd) {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
    const LatenessPattern p = pattern_of(row(300, 600, seed));
    EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts) << "seed " << seed;
    ASSERT_EQ(p.stretches.size(), 1u) << "seed " << seed;
    EXPECT_NEAR(p.stretches[0].start_seconds, 180, 0.6 + 1e-9) << "seed " << seed;
    EXPECT_NEAR(p.stretches[0].end_seconds, 360, 0.6 + 1e-9) << "seed " << seed;
    EXPECT_NEAR(p.late_share, 0.3, 0.01) << "seed " << seed;
  }
}

TEST(LatenessPattern, OneBadMinuteIsABurstNotAChronicCulprit) {
  const LatenessPattern p = pattern_of(row(450, 550));
  EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts);
  ASSERT_EQ(p.stretches.size(), 1u);
  EXPECT_NEAR(p.late_share, 0.1, 0.01);
}

// The host stalling a late rank for two columns (a second here), twice,
// beside its real burst: no burst of their own, although those columns
// are late.
TEST(LatenessPattern, TwoColumnStallsAddNoBurstBesideARealOne) {
  std::vector<float> r = row(300, 600);
  for (std::size_t c : {100u, 101u, 800u, 801u}) r[c] += static_cast<float>(40e-3);
  const LatenessPattern p = pattern_of(r);
  EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts);
  ASSERT_EQ(p.stretches.size(), 1u);
  EXPECT_EQ(p.stretches[0].first_step, step_at_column(300));
  EXPECT_NEAR(p.late_share, 304.0 / kColumns, 1e-9);
}

// A rank named for one stall alone (two columns): a burst there, not a
// chronic culprit.
TEST(LatenessPattern, ARankLateInOneStallAloneIsABurstThere) {
  std::vector<float> r = row(0, 0);
  for (std::size_t c : {400u, 401u}) r[c] += static_cast<float>(5.0);
  const LatenessPattern p = pattern_of(r);
  EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts);
  ASSERT_EQ(p.stretches.size(), 1u);
  EXPECT_EQ(p.stretches[0].first_step, step_at_column(400));
  EXPECT_EQ(p.stretches[0].last_step, step_at_column(402) - 1);
}

// Late in the last 5 of 1,000 columns: a burst in the last moments, not a
// chronic culprit since then.
TEST(LatenessPattern, ALateEndTooShortForChronicIsABurst) {
  const LatenessPattern p = pattern_of(row(995, kColumns));
  EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts);
  ASSERT_EQ(p.stretches.size(), 1u);
  EXPECT_EQ(p.stretches[0].last_step, kSteps);
}

// A rank late in 3 of every 10 columns, all job long (periodic noise):
// steadily late, a share of its steps.
TEST(LatenessPattern, LateInAShareOfItsStepsAllJobLongIsChronicWithThatShare) {
  std::vector<float> r = row(0, 0);
  for (std::size_t c = 0; c < kColumns; ++c) {
    if (c % 10 < 3) r[c] += static_cast<float>(3e-3 * kStepsPerColumn);
  }
  const LatenessPattern p = pattern_of(r);
  EXPECT_EQ(p.kind, LatenessPattern::Kind::chronic);
  EXPECT_EQ(p.onset_step, 1);
  EXPECT_NEAR(p.late_share, 0.3, 0.01);
  EXPECT_LT(p.late_share_low, 0.3);
  EXPECT_GT(p.late_share_high, 0.3);
}

// A rank whose own threads take its CPU now and then all job long (the
// story's rank 1): late in a tenth of its columns at random, from the
// start. Steady, not a list of bursts.
std::vector<float> now_and_then(std::size_t from, unsigned seed) {
  std::vector<float> r = row(0, 0, seed);
  std::mt19937 random(seed + 100);
  for (std::size_t c = from; c < kColumns; ++c) {
    if (random() % 10 == 0) r[c] += static_cast<float>(3e-3 * kStepsPerColumn);
  }
  return r;
}

TEST(LatenessPattern, LateNowAndThenAllJobLongIsChronicWithItsShare) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const LatenessPattern p = pattern_of(now_and_then(0, seed));
    EXPECT_EQ(p.kind, LatenessPattern::Kind::chronic) << "seed " << seed;
    EXPECT_EQ(p.onset_step, 1) << "seed " << seed;
    EXPECT_NEAR(p.late_share, 0.1, 0.03) << "seed " << seed;
  }
}

TEST(LatenessPattern, ManyBurstsListTheLatestAndCountTheRest) {
  std::vector<float> r = row(0, 0);
  for (std::size_t burst = 0; burst < 12; ++burst) {
    for (std::size_t c = 20 + 70 * burst; c < 50 + 70 * burst; ++c) {
      r[c] += static_cast<float>(2e-3 * kStepsPerColumn);
    }
  }
  const LatenessPattern p = pattern_of(r);
  EXPECT_EQ(p.kind, LatenessPattern::Kind::bursts);
  ASSERT_EQ(p.stretches.size(), kMaxListedStretches);
  EXPECT_EQ(p.stretches_unlisted, 12 - kMaxListedStretches);
  EXPECT_EQ(p.stretches.back().first_step, step_at_column(20 + 70 * 11));
  for (std::size_t i = 1; i < p.stretches.size(); ++i) {
    EXPECT_LT(p.stretches[i - 1].last_step, p.stretches[i].first_step);
  }
}

// With the reporting rank's clock at each column's end, the seconds are
// that clock's: here the late columns took three times as long.
TEST(LatenessPattern, TheSecondsAreTheColumnsClockWhereTheReportHasIt) {
  std::vector<double> ends;
  double now = 0;
  for (std::size_t c = 0; c < kColumns; ++c)
    ends.push_back(now += (c >= 300 && c < 600 ? 1.8 : 0.6));
  const LatenessPattern p =
      lateness_pattern(row(300, 600), kStepsPerColumn, kSteps, now, kThreshold, ends).value();
  ASSERT_EQ(p.stretches.size(), 1u);
  EXPECT_NEAR(p.stretches[0].start_seconds, 180, 0.6 + 1e-9);
  EXPECT_NEAR(p.stretches[0].end_seconds, 180 + 540, 1.8 + 1e-9);
}

// A row the job's reduction cut short (fewer steps in the last column):
// the share and the seconds count steps, not columns.
TEST(LatenessPattern, AShortLastColumnCountsItsOwnSteps) {
  std::vector<float> r = {0, 0, 0, static_cast<float>(2e-3 * 10)};
  const LatenessPattern p = lateness_pattern(r, 100, 310, 31, kThreshold).value();
  EXPECT_NEAR(p.late_share, 10.0 / 310, 1e-9);
}

TEST(LatenessPattern, NoPatternForAnEmptyRowOrOneLateInNoColumn) {
  EXPECT_FALSE(lateness_pattern({}, 1, 0, 0, kThreshold).has_value());
  // Named for its exchanges: late at no step.
  EXPECT_FALSE(lateness_pattern(row(0, 0), kStepsPerColumn, kSteps, kElapsed, 1.0).has_value());
}

}  // namespace
}  // namespace corenoise
