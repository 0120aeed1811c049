#include "probe/confirmation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "probe/verdict_text.h"

namespace corenoise {
namespace {

// Seven samples scattered by 0.5 % around the given figures.
CpuSamples core(unsigned cpu, double matmul, double noise, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0, 1);
  CpuSamples s;
  s.cpu = cpu;
  s.work[ProbeKind::matmul].flops = 1e9;
  s.work[ProbeKind::stream].bytes = 1e9;
  for (int i = 0; i < 7; ++i) {
    s.matmul_seconds.push_back(matmul * std::exp(0.005 * normal(rng)));
    s.samples[ProbeKind::clock].push_back(3e9 * std::exp(0.001 * normal(rng)));
    s.samples[ProbeKind::stream].push_back(0.05 * std::exp(0.005 * normal(rng)));
    DetourResult d;
    d.window_seconds = 0.025;
    d.total_seconds = 0.025 * std::max(0.0, noise + 0.002 * normal(rng));
    d.count = 5;
    s.detours.push_back(d);
  }
  return s;
}

std::vector<CoreFigures> figures(const std::vector<CpuSamples>& samples) {
  std::vector<CoreFigures> out;
  for (const auto& s : samples) out.push_back(summarize(s, "default"));
  return out;
}

TEST(Confirmation, EachSuspectIsFollowedByADistinctReferenceCore) {
  std::mt19937_64 rng(1);
  std::vector<CpuSamples> round;
  for (unsigned cpu = 0; cpu < 8; ++cpu) {
    round.push_back(core(cpu, cpu == 2 || cpu == 5 ? 0.012 : 0.010, 0.01, rng));
  }
  const ModeVerdicts v = judge(figures(round), Thresholds{});
  ASSERT_EQ(v.cores[2].state, CoreState::slow);
  ASSERT_EQ(v.cores[5].state, CoreState::slow);
  const ConfirmationPlan plan = plan_confirmation(v);
  EXPECT_EQ(plan.suspects, (std::vector<unsigned>{2, 5}));
  ASSERT_EQ(plan.cpus.size(), 4u);
  EXPECT_EQ(plan.cpus[0], 2u);
  EXPECT_EQ(plan.cpus[2], 5u);
  EXPECT_NE(plan.cpus[1], plan.cpus[3]);
  for (unsigned ref : plan.references) EXPECT_TRUE(ref != 2 && ref != 5);
}

TEST(Confirmation, AHealthyRoundNeedsNoConfirmation) {
  std::mt19937_64 rng(2);
  std::vector<CpuSamples> round;
  for (unsigned cpu = 0; cpu < 4; ++cpu) round.push_back(core(cpu, 0.010, 0.01, rng));
  EXPECT_TRUE(plan_confirmation(judge(figures(round), Thresholds{})).empty());
}

TEST(Confirmation, TheAlphaIsSharedAmongTheSuspectsAndTheRounds) {
  EXPECT_DOUBLE_EQ(confirmation_alpha(0.05, 10), 0.005);
  EXPECT_DOUBLE_EQ(confirmation_alpha(0.05, 0), 0.05);
  EXPECT_DOUBLE_EQ(confirmation_alpha(0.9, 1), 0.5);
  // Three rounds a healthy core must all pass: each at the cube root.
  EXPECT_NEAR(confirmation_alpha(0.05, 50, 3), 0.1, 1e-12);
}

// As many rounds as make the observed suspect share, raised to their
// number and times the suspects, no more than the family's rate.
TEST(Confirmation, RoundsFollowTheShareOfSuspects) {
  EXPECT_EQ(confirmation_rounds(0.05, 0, 3840), 0u);
  EXPECT_EQ(confirmation_rounds(0.05, 1, 2), 1u);  // too few cores to tell a share
  EXPECT_EQ(confirmation_rounds(0.05, 1, 3840), 1u);
  // 52 of 3,840 (1.35 %): the share's upper bound is 1.77 %, and
  // 52 · 0.0177² = 0.016 ≤ 0.05 while 52 · 0.0177 is not.
  EXPECT_EQ(confirmation_rounds(0.05, 52, 3840), 2u);
  EXPECT_EQ(confirmation_rounds(0.05, 1710, 128000), 3u);
  EXPECT_EQ(confirmation_rounds(0.05, 3000, 3840), kMaxConfirmationRounds);
  for (std::size_t s : {1u, 10u, 52u, 300u, 1710u}) {
    const std::size_t k = confirmation_rounds(0.05, s, 128000);
    const double p = 2.0 * s / 128000;  // above the share: a loose upper bound
    if (k < kMaxConfirmationRounds) {
      EXPECT_LE(s * std::pow(p, double(k)), 0.05) << s;
    }
  }
}

// A core that is bad again is confirmed; one that was bad once reads
// transient, keeping what it showed in the round.
TEST(Confirmation, BadAgainIsConfirmedAndAOneOffIsTransient) {
  std::mt19937_64 rng(3);
  std::vector<CpuSamples> round;
  for (unsigned cpu = 0; cpu < 6; ++cpu) {
    round.push_back(core(cpu, 0.010, cpu == 1 || cpu == 4 ? 0.15 : 0.01, rng));
  }
  ModeVerdicts v = judge(figures(round), Thresholds{});
  ASSERT_EQ(v.cores[1].state, CoreState::noisy);
  ASSERT_EQ(v.cores[4].state, CoreState::noisy);
  const ConfirmationPlan plan = plan_confirmation(v);
  // Re-measured: CPU 1 is still noisy, CPU 4's noise is gone.
  std::vector<CpuSamples> again;
  for (unsigned cpu : plan.cpus) again.push_back(core(cpu, 0.010, cpu == 1 ? 0.15 : 0.01, rng));
  apply_confirmation(v, figures(again), plan, Thresholds{}, confirmation_alpha(0.05, 2));

  EXPECT_EQ(v.cores[1].state, CoreState::noisy);
  ASSERT_TRUE(v.cores[1].confirmation);
  EXPECT_TRUE(v.cores[1].confirmation->confirmed);
  EXPECT_NEAR(*v.cores[1].confirmation->figure, 0.14, 0.01);
  EXPECT_NE(cause_text(v.cores[1].cause).find("confirmed"), std::string::npos);

  EXPECT_EQ(v.cores[4].state, CoreState::transient);
  ASSERT_TRUE(v.cores[4].confirmation);
  EXPECT_FALSE(v.cores[4].confirmation->confirmed);
  EXPECT_EQ(v.cores[4].confirmation->suspected, CoreState::noisy);
  EXPECT_NE(cause_text(v.cores[4].cause).find("noisy in the round"), std::string::npos);
  EXPECT_TRUE(v.cores[4].excess_noise.has_value());  // the round's figures are kept
  for (unsigned cpu : {0u, 2u, 3u, 5u}) EXPECT_EQ(v.cores[cpu].state, CoreState::ok);
}

// A confirmation measures only what the suspects' tests read: the detour
// windows for a noisy core, matmul, clock and detours for a slow one; and a
// noisy core re-measured with the detour probe alone is judged on that.
TEST(Confirmation, OnlyTheProbesTheSuspectsTestsReadAreRunAgain) {
  EXPECT_EQ(probes_to_confirm(CoreState::noisy), (std::vector<ProbeKind>{ProbeKind::detour}));
  EXPECT_EQ(probes_to_confirm(CoreState::contended), (std::vector<ProbeKind>{ProbeKind::stream}));
  EXPECT_EQ(probes_to_confirm(CoreState::throttled), (std::vector<ProbeKind>{ProbeKind::clock}));
  EXPECT_TRUE(probes_to_confirm(CoreState::ok).empty());

  std::mt19937_64 rng(7);
  std::vector<CpuSamples> round;
  for (unsigned cpu = 0; cpu < 6; ++cpu)
    round.push_back(core(cpu, 0.010, cpu == 1 ? 0.15 : 0.01, rng));
  ModeVerdicts v = judge(figures(round), Thresholds{});
  ASSERT_EQ(v.cores[1].state, CoreState::noisy);
  const ConfirmationPlan noisy_only = plan_confirmation(v);
  EXPECT_EQ(noisy_only.probes, (std::vector<ProbeKind>{ProbeKind::detour}));

  std::vector<CpuSamples> again;
  for (unsigned cpu : noisy_only.cpus) {
    CpuSamples s = core(cpu, 0.010, cpu == 1 ? 0.15 : 0.01, rng);
    s.matmul_seconds.clear();
    s.samples[ProbeKind::clock].clear();
    s.samples[ProbeKind::stream].clear();
    again.push_back(s);
  }
  apply_confirmation(v, figures(again), noisy_only, Thresholds{}, confirmation_alpha(0.05, 1));
  EXPECT_EQ(v.cores[1].state, CoreState::noisy);
  ASSERT_TRUE(v.cores[1].confirmation);
  EXPECT_TRUE(v.cores[1].confirmation->confirmed);

  round[4] = core(4, 0.013, 0.01, rng);
  const ModeVerdicts both = judge(figures(round), Thresholds{});
  ASSERT_EQ(both.cores[4].state, CoreState::slow);
  EXPECT_EQ(plan_confirmation(both).probes,
            (std::vector<ProbeKind>{ProbeKind::matmul, ProbeKind::clock, ProbeKind::detour}));
}

// Past kMaxReferencesPerKind suspects, references are shared: each is
// measured once, and every suspect still names the one it was judged beside.
TEST(Confirmation, SuspectsShareAtMostThreeReferencesAndEachNamesItsOwn) {
  std::mt19937_64 rng(8);
  std::vector<CpuSamples> round;
  for (unsigned cpu = 0; cpu < 12; ++cpu)
    round.push_back(core(cpu, cpu < 5 ? 0.012 : 0.010, 0.01, rng));
  ModeVerdicts v = judge(figures(round), Thresholds{});
  for (unsigned cpu = 0; cpu < 5; ++cpu) ASSERT_EQ(v.cores[cpu].state, CoreState::slow) << cpu;
  const ConfirmationPlan plan = plan_confirmation(v);
  ASSERT_EQ(plan.suspects.size(), 5u);
  EXPECT_EQ(plan.references.size(), kMaxReferencesPerKind);
  EXPECT_EQ(plan.cpus.size(), 5u + kMaxReferencesPerKind);  // each core measured once
  std::vector<CpuSamples> again;
  for (unsigned cpu : plan.cpus) again.push_back(core(cpu, cpu < 5 ? 0.012 : 0.010, 0.01, rng));
  apply_confirmation(v, figures(again), plan, Thresholds{}, confirmation_alpha(0.05, 5));
  for (std::size_t i = 0; i < plan.suspects.size(); ++i) {
    const CoreFigures& c = v.cores[plan.suspects[i]];
    ASSERT_TRUE(c.confirmation) << c.cpu;
    ASSERT_TRUE(c.confirmation->reference_cpu) << c.cpu;
    EXPECT_EQ(c.confirmation->reference_cpu, plan.partners[i]);
    EXPECT_NE(
        std::find(plan.references.begin(), plan.references.end(), *c.confirmation->reference_cpu),
        plan.references.end());
    EXPECT_TRUE(c.confirmation->confirmed) << c.cpu;
  }
}

// On two cores the other core is the reference, measured right after.
TEST(Confirmation, OnTwoCoresTheOtherCoreIsTheReference) {
  std::mt19937_64 rng(4);
  std::vector<CpuSamples> round{core(0, 0.010, 0.01, rng), core(1, 0.013, 0.01, rng)};
  ModeVerdicts v = judge(figures(round), Thresholds{});
  ASSERT_EQ(v.cores[1].state, CoreState::slow);
  ConfirmationPlan plan = plan_confirmation(v);
  EXPECT_EQ(plan.cpus, (std::vector<unsigned>{1, 0}));
  std::vector<CpuSamples> again{core(1, 0.013, 0.01, rng), core(0, 0.010, 0.01, rng)};
  apply_confirmation(v, figures(again), plan, Thresholds{}, 0.05);
  EXPECT_EQ(v.cores[1].state, CoreState::slow);
  EXPECT_EQ(v.cores[1].confirmation->reference_cpu, 0u);
}

}  // namespace
}  // namespace corenoise
