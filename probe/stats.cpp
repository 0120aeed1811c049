#include "probe/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace corenoise::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> sorted(std::span<const double> values) {
  std::vector<double> copy(values.begin(), values.end());
  std::sort(copy.begin(), copy.end());
  return copy;
}

double quantile_of_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  const double h = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const auto hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

}  // namespace

double median(std::span<const double> values) { return quantile_of_sorted(sorted(values), 0.5); }

double quantile(std::span<const double> values, double q) {
  return quantile_of_sorted(sorted(values), q);
}

double lower_quantile(std::span<const double> values, double q) {
  if (values.empty()) return kNaN;
  const auto s = sorted(values);
  const double rank = std::floor(std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size() - 1));
  return s[static_cast<std::size_t>(rank)];
}

double mad(std::span<const double> values) {
  if (values.empty()) return kNaN;
  const double m = median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - m));
  return median(deviations);
}

double robust_z(double x, double median, double mad) {
  const double diff = x - median;
  if (diff == 0) return 0;
  if (mad == 0)
    return diff > 0 ? std::numeric_limits<double>::infinity()
                    : -std::numeric_limits<double>::infinity();
  return diff / (1.4826 * mad);
}

double min(std::span<const double> values) {
  if (values.empty()) return kNaN;
  return *std::min_element(values.begin(), values.end());
}

double max(std::span<const double> values) {
  if (values.empty()) return kNaN;
  return *std::max_element(values.begin(), values.end());
}

}  // namespace corenoise::stats
