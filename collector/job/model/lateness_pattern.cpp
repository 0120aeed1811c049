#include "collector/job/model/lateness_pattern.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace corenoise {
namespace {

// The log-likelihood of k late columns in n, at their own rate.
double bernoulli(double k, double n) {
  if (k <= 0 || k >= n) return 0;
  return k * std::log(k / n) + (n - k) * std::log(1 - k / n);
}

// Binary segmentation of the late columns (late_before: a prefix count)
// over [first, last) where their rate changes: the cuts, appended to `cuts`
// in no order. A cut is kept where it raises the log-likelihood by more than
// `penalty`, both pieces at least `shortest` long.
void segment(std::span<const std::size_t> late_before, std::size_t first, std::size_t last,
             std::size_t shortest, double penalty, std::vector<std::size_t>& cuts) {
  if (last - first < 2 * shortest) return;
  const auto late = [&](std::size_t a, std::size_t b) {
    return static_cast<double>(late_before[b] - late_before[a]);
  };
  const auto length = [](std::size_t a, std::size_t b) { return static_cast<double>(b - a); };
  const double whole = bernoulli(late(first, last), length(first, last));
  double best_gain = 0;
  std::size_t best = 0;
  for (std::size_t k = first + shortest; k + shortest <= last; ++k) {
    const double gain = bernoulli(late(first, k), length(first, k)) +
                        bernoulli(late(k, last), length(k, last)) - whole;
    if (gain > best_gain) {
      best_gain = gain;
      best = k;
    }
  }
  if (best == 0 || best_gain <= penalty) return;
  cuts.push_back(best);
  segment(late_before, first, best, shortest, penalty, cuts);
  segment(late_before, best, last, shortest, penalty, cuts);
}

// The 95 % Wilson interval of k successes in n trials.
std::pair<double, double> wilson(double k, double n) {
  if (n <= 0) return {0, 1};
  const double z = 1.96, p = k / n, z2n = z * z / n;
  const double centre = (p + z2n / 2) / (1 + z2n);
  const double half = z * std::sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n);
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

// The runs of consecutive late columns, as [first, last).
std::vector<std::pair<std::size_t, std::size_t>> late_runs(
    std::span<const std::size_t> late_before) {
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t c = 0; c + 1 < late_before.size(); ++c) {
    if (late_before[c + 1] == late_before[c]) continue;
    if (!runs.empty() && runs.back().second == c) {
      runs.back().second = c + 1;
    } else {
      runs.emplace_back(c, c + 1);
    }
  }
  return runs;
}

// The row's late pieces, as column ranges [first, last), from the columns
// late on their own (`late_before`, a prefix count): the pieces of a steady
// rate of them, three columns at least, where that rate is a quarter or
// more, or where the row is one piece, late in one column in 20 and in
// three stretches or more (a rank late now and then all job long: its own
// threads), neighbours joined.
std::vector<std::pair<std::size_t, std::size_t>> late_pieces(
    std::span<const std::size_t> late_before) {
  const std::size_t n = late_before.size() - 1;
  const double penalty = 3 * std::log(std::max<double>(2, static_cast<double>(n)));
  const std::size_t shortest = std::max<std::size_t>(2, (n + 99) / 100);
  std::vector<std::size_t> cuts = {0, n};
  segment(late_before, 0, n, shortest, penalty, cuts);
  std::sort(cuts.begin(), cuts.end());
  const auto late_in = [&](std::size_t i) {
    return late_before[cuts[i + 1]] - late_before[cuts[i]];
  };
  std::vector<std::pair<std::size_t, std::size_t>> late;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const std::size_t a = cuts[i], b = cuts[i + 1];
    // Late at a quarter of its columns; or, the row one piece, in one
    // column in 20 at least and in three stretches or more: late now and
    // then all job long. (A rate three times the quietest piece's, where the
    // row was cut, was tried and is no sign: a balanced rank's jitter passes
    // the threshold in 16 % of its columns under Open MPI here.)
    const bool steady =
        cuts.size() == 2 && 20 * late_in(i) >= b - a && late_runs(late_before).size() >= 3;
    if (late_in(i) < 3 || !(4 * late_in(i) >= b - a || steady)) continue;
    if (!late.empty() && late.back().second == a) {
      late.back().second = b;
    } else {
      late.emplace_back(a, b);
    }
  }
  return late;
}

}  // namespace

std::optional<LatenessPattern> lateness_pattern(std::span<const float> row, long steps_per_column,
                                                long steps, double elapsed_seconds,
                                                double late_per_step_seconds,
                                                std::span<const double> column_end_seconds) {
  const long per_column = std::max(1L, steps_per_column);
  const std::size_t n = row.size();
  if (n == 0 || steps < 1) return std::nullopt;
  const auto steps_in = [&](std::size_t c) {
    const long first = static_cast<long>(c) * per_column;
    return std::max(1L, std::min(per_column, steps - first));
  };
  std::vector<std::size_t> late_before(n + 1, 0);
  double late_steps = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const bool late =
        static_cast<double>(row[c]) / static_cast<double>(steps_in(c)) > late_per_step_seconds;
    late_before[c + 1] = late_before[c] + (late ? 1 : 0);
    if (late) late_steps += static_cast<double>(steps_in(c));
  }
  // Late at no step: its lateness is elsewhere (exchanges), not in steps.
  if (late_before[n] == 0) return std::nullopt;
  LatenessPattern pattern;
  pattern.late_share = std::min(1.0, late_steps / static_cast<double>(steps));
  std::tie(pattern.late_share_low, pattern.late_share_high) =
      wilson(pattern.late_share * static_cast<double>(n), static_cast<double>(n));
  // No piece stands out: the stalls themselves are its bursts.
  auto late = late_pieces(late_before);
  if (late.empty()) late = late_runs(late_before);

  // The job's time where column c begins (c = n: where the row ends).
  const bool clocked = column_end_seconds.size() == n;
  const auto at_column = [&](std::size_t c) {
    if (clocked) return c == 0 ? 0.0 : std::max(0.0, column_end_seconds[c - 1]);
    const long step = std::min(steps, static_cast<long>(c) * per_column);
    return elapsed_seconds * static_cast<double>(step) / static_cast<double>(steps);
  };
  // The latest kMaxListedStretches: a reader wants the now.
  const std::size_t unlisted =
      late.size() > kMaxListedStretches ? late.size() - kMaxListedStretches : 0;
  pattern.stretches_unlisted = unlisted;
  for (std::size_t i = unlisted; i < late.size(); ++i) {
    const long first = static_cast<long>(late[i].first) * per_column + 1;
    const long last = std::min(steps, static_cast<long>(late[i].second) * per_column);
    pattern.stretches.push_back({first, last, at_column(late[i].first), at_column(late[i].second)});
  }
  // Chronic when the last late piece runs to the end and spans a tenth of
  // the row: a stall in the last moments is a burst.
  const auto& [from, to] = late.back();
  if (to == n && 10 * (to - from) >= n) {
    pattern.kind = LatenessPattern::Kind::chronic;
    pattern.onset_step = static_cast<long>(from) * per_column + 1;
    pattern.onset_seconds = at_column(from);
  } else {
    pattern.kind = LatenessPattern::Kind::bursts;
  }
  return pattern;
}

}  // namespace corenoise
