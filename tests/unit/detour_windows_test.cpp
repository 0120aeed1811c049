#include "probe/detour_windows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "probe/detour_probe.h"
#include "probe/tsc.h"

namespace corenoise {
namespace {

constexpr std::uint64_t kNominal = 25'000'000;  // ticks: 25 ms at 1 GHz

// Randomized property loop: whatever the seed and count, the lengths keep
// the round's total exactly and stay within [W/2, W/2 + n·W/2].
TEST(DetourWindows, KeepTheTotalAndTheBounds) {
  std::mt19937_64 rng(11);
  for (std::size_t n : {1u, 2u, 7u, 20u}) {
    for (int trial = 0; trial < 500; ++trial) {
      std::vector<std::uint64_t> w(n);
      draw_detour_windows(w, kNominal, rng);
      EXPECT_EQ(std::accumulate(w.begin(), w.end(), std::uint64_t{0}), n * kNominal);
      for (auto length : w) {
        EXPECT_GE(length, kNominal / 2);
        EXPECT_LE(length, kNominal / 2 + n * kNominal / 2);
      }
    }
  }
  std::vector<std::uint64_t> odd(3);
  draw_detour_windows(odd, 7, rng);  // an odd nominal: the halves round down
  EXPECT_EQ(odd[0] + odd[1] + odd[2], 21u);
}

// Random, not a fixed pattern: windows vary within a round and between
// rounds, and their starts (the running sums) spread over many windows'
// worth of phase — what breaks the lockstep with periodic noise.
TEST(DetourWindows, AreRandomWithinAndBetweenRounds) {
  std::mt19937_64 rng(20261201);  // fixed: a property loop, not a lottery
  std::set<std::uint64_t> third_starts;
  double sum = 0, sum_sq = 0;
  constexpr int kRounds = 2000;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::uint64_t> w(7);
    draw_detour_windows(w, kNominal, rng);
    EXPECT_GT(std::set<std::uint64_t>(w.begin(), w.end()).size(), 1u);
    const double start3 = static_cast<double>(w[0] + w[1] + w[2]);
    third_starts.insert(w[0] + w[1] + w[2]);
    sum += start3;
    sum_sq += start3 * start3;
  }
  EXPECT_GT(third_starts.size(), kRounds * 9 / 10u);
  const double mean = sum / kRounds;
  const double sd = std::sqrt(sum_sq / kRounds - mean * mean);
  // Mean 3 W; a uniform partition's spread: sqrt(3·4/(7²·8))·7·W/2 ≈ 0.86 W.
  EXPECT_NEAR(mean / kNominal, 3.0, 0.1);
  EXPECT_GT(sd / kNominal, 0.6);
  EXPECT_LT(sd / kNominal, 1.1);
}

// Unequal windows: the noise ratio is total lost / total window, not the
// mean of the windows' ratios (a long quiet window weighs more).
TEST(DetourWindows, NoiseRatioIsTotalLostOverTotalWindow) {
  DetourResult merged;
  const double windows[] = {0.0125, 0.060, 0.0275};
  const double lost[] = {0.005, 0.0, 0.001};
  for (int i = 0; i < 3; ++i) {
    DetourResult d;
    d.window_seconds = windows[i];
    d.total_seconds = lost[i];
    merged.merge(d);
  }
  EXPECT_NEAR(merged.window_seconds, 0.1, 1e-12);
  EXPECT_NEAR(merged.noise_ratio(), 0.006 / 0.1, 1e-12);
}

// The probe runs the window it is given, not the nominal.
TEST(DetourWindows, ProbeRunsTheGivenLength) {
  const ProcCounterReader counters;
  const DetourProbe probe(0, 0.5, 0, counters);
  EXPECT_EQ(probe.nominal_window_ticks(), seconds_to_tsc(0.5));
  const DetourResult d = probe.run(0, seconds_to_tsc(0.002));
  EXPECT_GE(d.window_seconds, 0.002 * 0.999);
  EXPECT_LT(d.window_seconds, 0.25);
}

}  // namespace
}  // namespace corenoise
