#include "daemon/persistence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "probe/verdict_text.h"

namespace corenoise {
namespace {

const PersistenceRule kDefaults;  // 2 of 3

// A round's cause as a label: persistence carries causes whole, never
// looks into them, and adds only its count of rounds (Cause::recurrence).
// Made a skipped cause with the label as its detail, whose sentence is
// the label.
Cause said(const std::string& label) {
  return label.empty() ? Cause{} : skipped_cause(SkipReason::other, label);
}

// P(Bin(n, p) >= k).
double binomial_tail(std::size_t n, std::size_t k, double p) {
  double tail = 0;
  for (std::size_t i = k; i <= n; ++i) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0)) *
            std::pow(p, static_cast<double>(i)) * std::pow(1 - p, static_cast<double>(n - i));
  }
  return tail;
}

TEST(VerdictHistory, ANoisyCoreIsTransientAtFirstAndPersistentAtItsKthBadRound) {
  VerdictHistory h(3);
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::skipped);  // never measured
  h.record(CoreState::ok, said(""));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::ok);
  h.record(CoreState::noisy, said("loses 9%"));
  PersistentVerdict v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::transient);
  EXPECT_EQ(v.round_state, CoreState::noisy);
  EXPECT_EQ(cause_text(v.round_cause), "loses 9%");
  EXPECT_EQ(v.unhealthy_rounds, 1u);
  EXPECT_EQ(v.rounds, 2u);
  EXPECT_EQ(cause_text(v.cause),
            "noisy in 1 of its last 2 measured rounds (2 make it persistent): loses 9%");
  h.record(CoreState::noisy, said("loses 11%"));
  v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::noisy);
  EXPECT_EQ(cause_text(v.cause), "loses 11%");
  EXPECT_EQ(v.unhealthy_rounds, 2u);
  EXPECT_EQ(v.rounds, 3u);
}

// The latest unhealthy round decides the state and cause; it stays while K
// of the last N were bad, then fades to transient, then ok.
TEST(VerdictHistory, LatestUnhealthyRoundDecidesAndFades) {
  VerdictHistory h(3);
  h.record(CoreState::noisy, said("noise"));
  h.record(CoreState::throttled, said("clock"));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::throttled);
  EXPECT_EQ(cause_text(h.verdict(kDefaults).cause), "clock");
  h.record(CoreState::ok, said(""));
  PersistentVerdict v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::throttled);  // 2 of 3, whatever this round said
  EXPECT_EQ(v.round_state, CoreState::ok);
  h.record(CoreState::ok, said(""));
  v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::transient);  // noise fell out: 1 of 3
  EXPECT_NE(cause_text(v.cause).find("throttled in 1 of its last 3"), std::string::npos)
      << cause_text(v.cause);
  h.record(CoreState::ok, said(""));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::ok);
  EXPECT_EQ(h.verdict(kDefaults).unhealthy_rounds, 0u);
}

TEST(VerdictHistory, SkippedRoundsAreNotMeasuredRounds) {
  VerdictHistory h(3);
  h.record(CoreState::noisy, said("a"));
  for (int i = 0; i < 10; ++i)
    h.record(CoreState::skipped, said("busy (90% since the last round)"));
  // Skipped for now, with the cause, but not forgotten.
  PersistentVerdict v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::skipped);
  EXPECT_EQ(cause_text(v.cause), "busy (90% since the last round)");
  EXPECT_EQ(v.round_state, CoreState::skipped);
  EXPECT_EQ(v.rounds, 1u);
  EXPECT_EQ(v.unhealthy_rounds, 1u);
  h.record(CoreState::noisy, said("b"));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::noisy);  // 2 of 2 measured
  h.record(CoreState::skipped, said("offline"));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::skipped);
  EXPECT_EQ(h.verdict(kDefaults).unhealthy_rounds, 2u);
  h.record(CoreState::ok, said(""));
  v = h.verdict(kDefaults);
  EXPECT_EQ(v.state, CoreState::noisy);  // back: 2 of its last 3 measured
  EXPECT_EQ(cause_text(v.cause), "b");

  VerdictHistory fine(3);
  fine.record(CoreState::ok, said(""));
  fine.record(CoreState::skipped, said("offline"));
  EXPECT_EQ(fine.verdict(kDefaults).state, CoreState::skipped);
  EXPECT_EQ(cause_text(fine.verdict(kDefaults).cause), "offline");
  fine.record(CoreState::ok, said(""));
  EXPECT_EQ(fine.verdict(kDefaults).state, CoreState::ok);
  EXPECT_EQ(fine.rounds(), 2u);
}

TEST(VerdictHistory, ARoundThatSaysTransientIsTransient) {
  VerdictHistory h(3);
  h.record(CoreState::transient, said("not borne out"));
  EXPECT_EQ(h.verdict(kDefaults).state, CoreState::transient);
  EXPECT_EQ(h.unhealthy_rounds(), 0u);
}

TEST(VerdictHistory, ResizeKeepsTheNewestRounds) {
  VerdictHistory old_bad(5);
  for (CoreState s :
       {CoreState::noisy, CoreState::noisy, CoreState::ok, CoreState::ok, CoreState::ok}) {
    old_bad.record(s, said(""));
  }
  EXPECT_EQ(old_bad.verdict({5, 2}).state, CoreState::noisy);
  old_bad.resize(3);
  EXPECT_EQ(old_bad.capacity(), 3u);
  EXPECT_EQ(old_bad.rounds(), 3u);
  EXPECT_EQ(old_bad.verdict(kDefaults).state, CoreState::ok);

  VerdictHistory new_bad(5);
  for (CoreState s :
       {CoreState::ok, CoreState::ok, CoreState::ok, CoreState::slow, CoreState::contended}) {
    new_bad.record(s, said(""));
  }
  new_bad.resize(2);
  EXPECT_EQ(new_bad.verdict({2, 2}).state, CoreState::contended);
  // Growing keeps everything and remembers more from then on.
  new_bad.resize(4);
  new_bad.record(CoreState::ok, said(""));
  new_bad.record(CoreState::ok, said(""));
  EXPECT_EQ(new_bad.rounds(), 4u);
  EXPECT_EQ(new_bad.verdict({4, 2}).state, CoreState::contended);
}

// K = 1 of N = 1 is today's behaviour: the persistent state is the round's.
TEST(VerdictHistory, OneOfOneIsTheRoundsOwnVerdict) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(kAllCoreStates) - 1);
  VerdictHistory h(1);
  bool measured = false;
  for (int round = 0; round < 1000; ++round) {
    const CoreState s = kAllCoreStates[pick(random)];
    h.record(s, said("cause " + std::to_string(round)));
    measured = measured || s != CoreState::skipped;
    const PersistentVerdict v = h.verdict({1, 1});
    EXPECT_EQ(v.state, s) << round;
    EXPECT_EQ(cause_text(v.cause), "cause " + std::to_string(round)) << round;
  }
  EXPECT_TRUE(measured);
}

// The point of persistence: with a per-round false rate p on independent
// rounds, a healthy core is persistently unhealthy with probability
// P(Bin(N, p) >= K) and transient with P(1 <= Bin(N, p) < K), whatever
// skipped rounds come between. Checked within 5 standard errors of the
// sampled proportion, over several N, K, p and seeds.
TEST(VerdictHistory, PersistentFalseRateIsTheBinomialTail) {
  struct Case {
    std::size_t n, k;
    double p;
  };
  const std::vector<Case> cases = {{3, 2, 0.05}, {3, 2, 0.3},   {5, 3, 0.2},   {1, 1, 0.1},
                                   {8, 1, 0.02}, {10, 4, 0.25}, {64, 20, 0.3}, {4, 4, 0.5}};
  const CoreState kBad[] = {CoreState::noisy, CoreState::throttled, CoreState::contended,
                            CoreState::slow};
  constexpr int kCores = 20000;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 random(seed);
    for (const Case& c : cases) {
      std::bernoulli_distribution bad(c.p), skip(0.3);
      std::uniform_int_distribution<int> which(0, 3);
      int persistent = 0, transient = 0;
      for (int core = 0; core < kCores; ++core) {
        VerdictHistory h(c.n);
        for (std::size_t measured = 0; measured < c.n;) {
          if (skip(random)) {
            h.record(CoreState::skipped, said("busy"));
            continue;
          }
          h.record(bad(random) ? kBad[which(random)] : CoreState::ok, said(""));
          ++measured;
        }
        const CoreState state = h.verdict({c.n, c.k}).state;
        persistent += is_unhealthy(state) ? 1 : 0;
        transient += state == CoreState::transient ? 1 : 0;
      }
      const double expected = binomial_tail(c.n, c.k, c.p);
      const double expected_transient = binomial_tail(c.n, 1, c.p) - expected;
      const auto tolerance = [&](double q) { return 5 * std::sqrt(q * (1 - q) / kCores) + 1e-9; };
      const double got = static_cast<double>(persistent) / kCores;
      const double got_transient = static_cast<double>(transient) / kCores;
      EXPECT_NEAR(got, expected, tolerance(expected))
          << "N=" << c.n << " K=" << c.k << " p=" << c.p << " seed " << seed;
      EXPECT_NEAR(got_transient, expected_transient, tolerance(expected_transient))
          << "N=" << c.n << " K=" << c.k << " p=" << c.p << " seed " << seed;
    }
  }
  // The figure docs/daemon.md quotes: 0.5 % per round, 2 of 3.
  EXPECT_NEAR(binomial_tail(3, 2, 0.005), 7.475e-5, 1e-9);
}

}  // namespace
}  // namespace corenoise
