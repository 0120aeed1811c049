#include "probe/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace corenoise {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  const std::vector<double> odd{5, 1, 3};
  const std::vector<double> even{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(stats::median(odd), 3);
  EXPECT_DOUBLE_EQ(stats::median(even), 2.5);
}

TEST(Stats, EmptyInputsAreNaN) {
  const std::vector<double> none;
  EXPECT_TRUE(std::isnan(stats::median(none)));
  EXPECT_TRUE(std::isnan(stats::mad(none)));
  EXPECT_TRUE(std::isnan(stats::quantile(none, 0.5)));
  EXPECT_TRUE(std::isnan(stats::min(none)));
  EXPECT_TRUE(std::isnan(stats::max(none)));
}

TEST(Stats, MadIgnoresASingleOutlier) {
  const std::vector<double> values{10, 10.1, 9.9, 1000, 10.2};
  EXPECT_NEAR(stats::mad(values), 0.1, 1e-12);
}

TEST(Stats, QuantileInterpolatesLinearly) {
  const std::vector<double> values{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(stats::quantile(values, 0.25), 2);
  EXPECT_DOUBLE_EQ(stats::quantile(values, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(stats::quantile(values, -1), 1);  // clamped
  EXPECT_DOUBLE_EQ(stats::quantile(values, 2), 5);
}

TEST(Stats, LowerQuantileIsAnActualValue) {
  const std::vector<double> two{0.16, 0.06};
  EXPECT_DOUBLE_EQ(stats::lower_quantile(two, 0.25), 0.06);
  const std::vector<double> nine{9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(stats::lower_quantile(nine, 0.25), 3);
  EXPECT_DOUBLE_EQ(stats::lower_quantile(nine, 1), 9);
  EXPECT_DOUBLE_EQ(stats::lower_quantile(nine, 0), 1);
}

TEST(Stats, RobustZ) {
  EXPECT_DOUBLE_EQ(stats::robust_z(5, 5, 0), 0);
  EXPECT_TRUE(std::isinf(stats::robust_z(6, 5, 0)));
  EXPECT_LT(stats::robust_z(4, 5, 0), 0);
  EXPECT_NEAR(stats::robust_z(5 + 1.4826, 5, 1), 1, 1e-12);
}

// Randomized properties (chrony's habit): whatever the data, these hold.
TEST(Stats, RandomizedProperties) {
  std::mt19937_64 rng(20261129);
  std::lognormal_distribution<double> skewed(0, 0.5);
  for (int trial = 0; trial < 500; ++trial) {
    const std::size_t n = 1 + rng() % 50;
    std::vector<double> v(n);
    for (auto& x : v) x = skewed(rng);
    const double med = stats::median(v);
    const double lo = stats::min(v), hi = stats::max(v);

    // Bounds and order statistics.
    EXPECT_LE(lo, med);
    EXPECT_LE(med, hi);
    EXPECT_DOUBLE_EQ(stats::quantile(v, 0), lo);
    EXPECT_DOUBLE_EQ(stats::quantile(v, 1), hi);
    EXPECT_DOUBLE_EQ(stats::quantile(v, 0.5), med);
    const double lq = stats::lower_quantile(v, 0.25);
    EXPECT_NE(std::find(v.begin(), v.end(), lq), v.end());
    EXPECT_LE(lq, stats::quantile(v, 0.25));
    double previous = lo;
    for (double q = 0.05; q <= 1.0; q += 0.05) {
      const double value = stats::quantile(v, q);
      EXPECT_GE(value, previous);
      previous = value;
    }
    // At least half of the values on each side of the median.
    const auto below = std::count_if(v.begin(), v.end(), [&](double x) { return x <= med; });
    const auto above = std::count_if(v.begin(), v.end(), [&](double x) { return x >= med; });
    EXPECT_GE(2 * below, static_cast<long>(n));
    EXPECT_GE(2 * above, static_cast<long>(n));

    // Order does not matter.
    std::vector<double> shuffled = v;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_DOUBLE_EQ(stats::median(shuffled), med);
    EXPECT_DOUBLE_EQ(stats::mad(shuffled), stats::mad(v));

    // Shift and scale equivariance of the median, shift invariance and scale
    // equivariance of the MAD.
    const double shift = 3.5, scale = 2.0;
    std::vector<double> moved = v;
    for (auto& x : moved) x = x * scale + shift;
    EXPECT_NEAR(stats::median(moved), med * scale + shift, 1e-9);
    EXPECT_NEAR(stats::mad(moved), stats::mad(v) * scale, 1e-9);
    EXPECT_GE(stats::mad(v), 0);
  }
}

}  // namespace
}  // namespace corenoise
