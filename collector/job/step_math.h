// Lateness and delay cost from the ranks' waits at the same steps, shared
// by the MPI reduction at MPI_Finalize (job_reduction.cpp) and the report
// from spill files (spill_report.h). Per step (or bin of steps):
//   the last rank to arrive waited least (w_min); every other rank i waited
//   w_i - w_min for it, so the last arriver caused sum_i w_i - n·w_min of
//   waiting (Scalasca's delay cost);
//   rank i arrived w_max - w_i after the first (its lateness, the heatmap).
// Pure.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

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

}  // namespace corenoise
