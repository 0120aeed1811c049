// Robust statistics for timing samples. Pure: no I/O, no clock, no state.
// Timings are skewed to the right (interruptions only ever add time), so
// medians and MADs describe them; means and standard deviations do not.
#pragma once

#include <span>
#include <vector>

namespace corenoise::stats {

// Median of `values` (the mean of the two middle values for an even count).
// NaN for an empty span. Does not modify the input.
double median(std::span<const double> values);
// Median absolute deviation from the median (unscaled). NaN if empty.
double mad(std::span<const double> values);
// Quantile q in [0,1] with linear interpolation between order statistics
// (Hyndman & Fan type 7, R's default). NaN if empty; q is clamped to [0,1].
double quantile(std::span<const double> values, double q);
// The order statistic at rank floor(q·(n−1)): an actual value, never an
// interpolation, so that for two values the 0.25 quantile is the smaller.
// NaN if empty; q is clamped to [0,1].
double lower_quantile(std::span<const double> values, double q);
// Robust z-score: (x - median) / (1.4826 · MAD). The factor makes the MAD a
// consistent estimator of σ for normal data. 0 when x equals the median;
// ±infinity when MAD is 0 and x differs from the median.
double robust_z(double x, double median, double mad);
// Minimum and maximum; NaN if empty.
double min(std::span<const double> values);
double max(std::span<const double> values);

}  // namespace corenoise::stats
