// How sure a figure is, from the round's own samples. Pure: no I/O, no
// clock, no state.
//
// Every figure of a round is an estimate from a handful of samples (seven
// by default), so it carries a standard error and the degrees of freedom
// of a Student-t interval. Times, rates and their ratios are positive and
// compared as ratios, so their error is relative: an Uncertainty of the
// logarithm (Scale::log). Shares of time lost to detours can be 0 and are
// compared by difference: an Uncertainty of the figure itself
// (Scale::linear).
//
// A verdict asks whether an effect clears its threshold *with confidence*:
// lower_bound(value, u, alpha) ≥ threshold, where the true value lies below
// the bound with probability at most alpha. alpha = 0.5 gives the point
// estimate itself: the bound then ignores the sampling error, as verdicts
// did before they carried confidence, kept for comparison.
#pragma once

#include <optional>
#include <span>

namespace corenoise {

enum class Scale { log, linear };

struct Uncertainty {
  Scale scale = Scale::log;
  double se = 0;  // standard error: of log(value) on Scale::log, of value on Scale::linear
  double df = 0;  // degrees of freedom of the t interval; 0 = not known (one sample): no bound
  bool known() const { return df > 0; }
};

struct Interval {
  double lo = 0, hi = 0;
};

// Quantile p of Student's t with df degrees of freedom (p in (0,1), df > 0).
double student_t_quantile(double p, double df);

// The two-sided interval at `confidence` (e.g. 0.95) around `value`;
// nullopt when the uncertainty is not known.
std::optional<Interval> interval(double value, const Uncertainty& u, double confidence);
// One-sided bounds at level alpha: the true value lies below lower_bound
// (above upper_bound) with probability at most alpha. alpha ≥ 0.5 gives
// `value`; nullopt when the uncertainty is not known (and alpha < 0.5).
std::optional<double> lower_bound(double value, const Uncertainty& u, double alpha);
std::optional<double> upper_bound(double value, const Uncertainty& u, double alpha);

// Of a ratio or product of two independent figures on Scale::log (or of a
// difference or sum on Scale::linear): standard errors add in quadrature;
// the degrees of freedom are the smaller (conservative). Unknown if either is.
Uncertainty combine(const Uncertainty& a, const Uncertainty& b);

// The uncertainty of a location figure (a median or a mean) of n
// per-sample values, on the log scale: the standard deviation of
// log(values) over √n, times `efficiency` (kMedianEfficiency for a median,
// 1 for a mean); df = n − 1. Values must be > 0. Not a robust spread (MAD):
// with seven samples a MAD-based error puts 3× more true values outside a
// 99 % bound than it says, the standard deviation keeps to it
// (tests/unit/uncertainty_test.cpp). Not for a sample minimum or a fast
// decile of few samples either: their error is small exactly when the
// samples' spread is, so no spread-based interval keeps its level.
Uncertainty log_uncertainty(std::span<const double> values, double efficiency = 1.0);
// The uncertainty of the mean of n per-window shares on the linear scale:
// their standard deviation over √n (not a robust spread: detours are what
// the mean is about); df = n − 1.
Uncertainty mean_uncertainty(std::span<const double> values);
// The same for a pooled share Σ lost / Σ window over windows of unequal
// length (isolated rounds draw them at random: detour_windows.h): the
// ratio estimator's error, √(n/(n−1) · Σ w_i² (r_i − r)²) / Σ w_i, which
// is mean_uncertainty's when the windows are equal; df = n − 1.
Uncertainty pooled_share_uncertainty(std::span<const double> lost, std::span<const double> windows);
// The uncertainty of the median of k figures, each with uncertainty u_i:
// 1.2533 · median(se_i) / √k, df the median df. For k = 1, that figure's.
Uncertainty median_uncertainty(std::span<const Uncertainty> members);

// The confidence of the intervals that reports show (JSON, tables, causes).
inline constexpr double kReportedConfidence = 0.95;

inline constexpr double kMedianEfficiency = 1.2533;  // √(π/2): se(median) / se(mean)

}  // namespace corenoise
