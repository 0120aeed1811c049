#include "probe/uncertainty.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <vector>

#include "probe/stats.h"

namespace corenoise {
namespace {

// The standard deviation of `values` over √n: the standard error of their mean.
double standard_error(std::span<const double> values) {
  const double n = static_cast<double>(values.size());
  double mean = 0;
  for (double v : values) mean += v / n;
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / (n - 1) / n);
}

// The bound of `value` shifted by t standard errors on its scale.
double shifted(double value, const Uncertainty& u, double t) {
  return u.scale == Scale::log ? value * std::exp(t * u.se) : value + t * u.se;
}

}  // namespace

double student_t_quantile(double p, double df) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

std::optional<Interval> interval(double value, const Uncertainty& u, double confidence) {
  if (!u.known()) return std::nullopt;
  const double t = student_t_quantile(0.5 + confidence / 2, u.df);
  return Interval{shifted(value, u, -t), shifted(value, u, t)};
}

std::optional<double> lower_bound(double value, const Uncertainty& u, double alpha) {
  if (alpha >= 0.5) return value;
  if (!u.known()) return std::nullopt;
  return shifted(value, u, -student_t_quantile(1 - alpha, u.df));
}

std::optional<double> upper_bound(double value, const Uncertainty& u, double alpha) {
  if (alpha >= 0.5) return value;
  if (!u.known()) return std::nullopt;
  return shifted(value, u, student_t_quantile(1 - alpha, u.df));
}

Uncertainty combine(const Uncertainty& a, const Uncertainty& b) {
  if (!a.known() || !b.known()) return {a.scale, 0, 0};
  return {a.scale, std::hypot(a.se, b.se), std::min(a.df, b.df)};
}

Uncertainty log_uncertainty(std::span<const double> values, double efficiency) {
  if (values.size() < 2) return {Scale::log, 0, 0};
  std::vector<double> logs;
  logs.reserve(values.size());
  for (double v : values) logs.push_back(std::log(v));
  return {Scale::log, efficiency * standard_error(logs), static_cast<double>(values.size() - 1)};
}

Uncertainty mean_uncertainty(std::span<const double> values) {
  if (values.size() < 2) return {Scale::linear, 0, 0};
  return {Scale::linear, standard_error(values), static_cast<double>(values.size() - 1)};
}

Uncertainty pooled_share_uncertainty(std::span<const double> lost,
                                     std::span<const double> windows) {
  const std::size_t n = std::min(lost.size(), windows.size());
  double total_lost = 0, total_window = 0;
  for (std::size_t i = 0; i < n; ++i) total_lost += lost[i], total_window += windows[i];
  if (n < 2 || total_window <= 0) return {Scale::linear, 0, 0};
  const double r = total_lost / total_window;
  double squares = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double residual = lost[i] - r * windows[i];  // w_i (r_i − r)
    squares += residual * residual;
  }
  const double dn = static_cast<double>(n);
  return {Scale::linear, std::sqrt(dn / (dn - 1) * squares) / total_window, dn - 1};
}

Uncertainty median_uncertainty(std::span<const Uncertainty> members) {
  if (members.empty()) return {};
  if (members.size() == 1) return members.front();
  std::vector<double> se, df;
  for (const auto& m : members) {
    if (!m.known()) return {members.front().scale, 0, 0};
    se.push_back(m.se);
    df.push_back(m.df);
  }
  const double k = static_cast<double>(members.size());
  return {members.front().scale, kMedianEfficiency * stats::median(se) / std::sqrt(k),
          stats::median(df)};
}

}  // namespace corenoise
