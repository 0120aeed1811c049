// Lateness and delay cost from the ranks' waits at the same steps, shared
// by the MPI reduction at MPI_Finalize (job_reduction.cpp) and the report
// from spill files (spill_report.h). Per step (or bin of steps):
//   the last rank to arrive waited least (w_min); every other rank i waited
//   w_i - w_min for it, so the last arriver caused sum_i w_i - n·w_min of
//   waiting (Scalasca's delay cost);
//   rank i arrived w_max - w_i after the first (its lateness, the heatmap).
// Pure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "probe/stats.h"

namespace corenoise {

// The heatmap's width: 3,840 ranks × 1,000 columns is what the page draws
// quickly and what rank 0 holds.
inline constexpr std::size_t kMaxLatenessColumns = 1000;

// Waiting caused by `rank` over the bins where it arrived last.
inline double wait_caused(int rank, int ranks, std::span<const double> minimum,
                          std::span<const int> last_rank, std::span<const double> sum) {
  double caused = 0;
  for (std::size_t i = 0; i < minimum.size(); ++i) {
    if (last_rank[i] == rank) caused += sum[i] - ranks * minimum[i];
  }
  return caused;
}

// A rank's lateness per column of at most kMaxLatenessColumns columns,
// each column the sum over its bins; `*steps_per_column` is set.
inline std::vector<float> lateness_columns(std::span<const double> mine,
                                           std::span<const double> maximum, long steps_per_bin,
                                           long* steps_per_column) {
  const std::size_t n = mine.size();
  const std::size_t columns = n < kMaxLatenessColumns ? n : kMaxLatenessColumns;
  const std::size_t per_column = columns == 0 ? 1 : (n + columns - 1) / columns;
  *steps_per_column = static_cast<long>(per_column) * steps_per_bin;
  std::vector<float> lateness;
  for (std::size_t start = 0; start < n; start += per_column) {
    double late = 0;
    for (std::size_t i = start; i < n && i < start + per_column; ++i) late += maximum[i] - mine[i];
    lateness.push_back(static_cast<float>(late));
  }
  return lateness;
}

// Where each column of lateness_columns ends in time: the end of its last
// bin (`bin_ends`, a rank's clock at each bin's last step), less `since`.
inline std::vector<double> column_ends(std::span<const double> bin_ends, double since) {
  const std::size_t n = bin_ends.size();
  const std::size_t columns = n < kMaxLatenessColumns ? n : kMaxLatenessColumns;
  const std::size_t per_column = columns == 0 ? 1 : (n + columns - 1) / columns;
  std::vector<double> ends;
  for (std::size_t start = 0; start < n; start += per_column)
    ends.push_back(bin_ends[std::min(n, start + per_column) - 1] - since);
  return ends;
}

// What-if: the job's time each rank's lateness cost, by replaying the
// steps without it. At a bin where a rank arrived last (waited least,
// `minimum`), the step would have ended when the next-to-last arrived: its
// wait (`second`, the least of the others') less the last's is how much
// sooner every rank would have left. Summed over the bins where that rank
// was last, as (rank, seconds), by rank; exact with one step a bin, and
// with more a bin's last arriver stands for its steps. A bin with no other
// rank (`second` infinite) costs nothing.
inline std::vector<std::pair<int, double>> savings_by_rank(std::span<const double> minimum,
                                                           std::span<const int> last_rank,
                                                           std::span<const double> second) {
  std::vector<std::pair<int, double>> saving;
  for (std::size_t i = 0; i < minimum.size() && i < second.size(); ++i) {
    if (!std::isfinite(second[i]) || second[i] <= minimum[i]) continue;
    saving.emplace_back(last_rank[i], second[i] - minimum[i]);
  }
  std::sort(saving.begin(), saving.end());
  std::vector<std::pair<int, double>> summed;
  for (const auto& [rank, seconds] : saving) {
    if (!summed.empty() && summed.back().first == rank) {
      summed.back().second += seconds;
    } else {
      summed.emplace_back(rank, seconds);
    }
  }
  return summed;
}

// The waiting caused at each bin: every rank's wait there beyond the
// least, summed (sum - n·w_min).
inline std::vector<double> caused_per_bin(int ranks, std::span<const double> minimum,
                                          std::span<const double> sum) {
  std::vector<double> caused(minimum.size());
  for (std::size_t i = 0; i < minimum.size(); ++i)
    caused[i] = std::max(0.0, sum[i] - ranks * minimum[i]);
  return caused;
}

// The ranks snapshot their measures at steps 1, 2, 4, ... up to this
// (job_session.h): the warm-up ends at one of them.
inline constexpr long kMaxWarmupSteps = 1024;

// The warm-up: the leading steps before the step times settle, whose
// waiting (a JIT's compile, first-touch faults, a rank's extra set-up)
// would otherwise be mixed with the steady state's. A bin is unsettled
// when its caused waiting per step exceeds 95 % of the steps of the job's
// second half, and their median by five robust standard deviations
// (1.4826 × MAD) and by 1 ms: a program's steps alternate between kinds (a
// barrier after the compute, then a small Allreduce), so only what the
// steady state rarely reached sets a step apart. The warm-up is at least the first step,
// and runs on to the last unsettled bin before the first two settled bins
// in a row (a program's set-up barrier may be even, its first compute step
// not). Rounded up to a power of two that is a whole number of bins; where
// that passes kMaxWarmupSteps or half the job, the steps never settled
// early, and the warm-up is the first step (bin). 0 (no split) for a job of
// fewer than 4 steps, which has no steady state.
inline long warmup_steps(std::span<const double> caused, long steps_per_bin, long steps) {
  // Bins past kMaxWarmupSteps: no snapshot ends a bin.
  if (steps < 4 || caused.empty() || steps_per_bin < 1 || steps_per_bin > kMaxWarmupSteps) return 0;
  const auto per_step = [&](std::size_t bin) {
    const long first = static_cast<long>(bin) * steps_per_bin;
    return caused[bin] / static_cast<double>(std::min(steps_per_bin, steps - first));
  };
  std::vector<double> steady;
  for (std::size_t bin = caused.size() / 2; bin < caused.size(); ++bin)
    steady.push_back(per_step(bin));
  const double median = stats::median(steady);
  // The 95th percentile, not the largest: one hiccup of the host in the
  // steady state would otherwise hide a warm-up step of the same size.
  std::vector<double> sorted = steady;
  std::sort(sorted.begin(), sorted.end());
  const double high =
      sorted[static_cast<std::size_t>(0.95 * static_cast<double>(sorted.size() - 1))];
  const double bound = std::max(median + std::max(5 * 1.4826 * stats::mad(steady), 1e-3), high);
  long last_unsettled = 1;  // the first step is always warm-up
  int settled_in_a_row = 0;
  bool settled = false;
  for (std::size_t bin = 0; bin < caused.size(); ++bin) {
    const long first = static_cast<long>(bin) * steps_per_bin;
    if (first >= kMaxWarmupSteps) break;
    if (per_step(bin) > bound) {
      last_unsettled = first + steps_per_bin;
      settled_in_a_row = 0;
    } else if (++settled_in_a_row == 2) {
      settled = true;
      break;
    }
  }
  if (!settled) last_unsettled = 1;  // never settled early: its first step
  long warmup = steps_per_bin;
  while (warmup < last_unsettled) warmup *= 2;
  if (warmup > kMaxWarmupSteps || warmup > steps / 2) warmup = steps_per_bin;
  return warmup <= steps / 2 ? warmup : 0;
}

}  // namespace corenoise
