#include "collector/job/spill_report.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "collector/job/step_math.h"

namespace corenoise {

std::vector<SpilledRank> read_spill_dir(const std::string& dir, std::string* problems) {
  std::vector<SpilledRank> ranks;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || entry.path().extension() != ".spill") continue;
    std::string problem;
    if (auto rank = read_spill(entry.path().string(), &problem)) {
      ranks.push_back(std::move(*rank));
    } else if (problems != nullptr) {
      *problems += (problems->empty() ? "" : "; ") + problem;
    }
  }
  if (error && problems != nullptr) *problems += "cannot read " + dir + ": " + error.message();
  std::sort(ranks.begin(), ranks.end(),
            [](const SpilledRank& a, const SpilledRank& b) { return a.header.rank < b.header.rank; });
  return ranks;
}

SpillReport report_from_spills(const std::vector<SpilledRank>& ranks) {
  SpillReport out;
  if (ranks.empty()) return out;
  const SpillHeader& first = ranks.front().header;
  out.facts.version = CORENOISE_VERSION;
  out.facts.program = first.program;
  out.facts.family = first.family;
  out.facts.started_unix_seconds = first.started_unix_seconds;
  out.facts.ranks_total = first.size;

  // The steps every rank finished, at the coarsest rank's bin width (the
  // widths are powers of two, so finer bins merge exactly).
  std::uint64_t width = 1, common_steps = std::numeric_limits<std::uint64_t>::max();
  for (const auto& r : ranks) {
    width = std::max<std::uint64_t>(width, r.header.step_counts[1]);
    common_steps = std::min<std::uint64_t>(common_steps, r.header.step_counts[0]);
  }
  const std::size_t n = static_cast<std::size_t>(common_steps / width);
  std::vector<std::vector<double>> bins;
  for (const auto& r : ranks) {
    std::vector<double> mine = r.bins;
    for (std::uint64_t w = std::max<std::uint64_t>(1, r.header.step_counts[1]); w < width; w *= 2) {
      std::vector<double> merged((mine.size() + 1) / 2, 0.0);
      for (std::size_t i = 0; i < mine.size(); ++i) merged[i / 2] += mine[i];
      mine = std::move(merged);
    }
    mine.resize(n, 0.0);
    bins.push_back(std::move(mine));
  }
  std::vector<double> minimum(n, std::numeric_limits<double>::infinity()), maximum(n, 0.0), sum(n, 0.0);
  std::vector<int> last(n, -1);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const double w = bins[k][i];
      if (w < minimum[i]) {
        minimum[i] = w;
        last[i] = ranks[k].header.rank;
      }
      maximum[i] = std::max(maximum[i], w);
      sum[i] += w;
    }
  }
  const int reporting = static_cast<int>(ranks.size());
  std::uint64_t fewest = std::numeric_limits<std::uint64_t>::max(), most = 0;
  int stopped_first = -1;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const SpilledRank& r = ranks[k];
    RankRecord record;
    record.rank = r.header.rank;
    record.host = r.header.host;
    record.cpus = r.cpus;
    record.pid = r.header.pid;
    std::copy_n(r.header.measures, kRankMeasureCount, as_array(record.measures));
    record.measures.wait_caused_seconds = wait_caused(r.header.rank, reporting, minimum, last, sum);
    out.facts.lateness.push_back(lateness_columns(bins[k], maximum, static_cast<long>(width),
                                                  &out.facts.steps_per_column));
    out.records.push_back(std::move(record));
    if (r.header.step_counts[0] < fewest) {
      fewest = r.header.step_counts[0];
      stopped_first = r.header.rank;
    }
    most = std::max<std::uint64_t>(most, r.header.step_counts[0]);
  }
  out.facts.steps = static_cast<long>(n * width);
  std::string reason = "the job ended before MPI_Finalize (killed, or a rank was lost): built from " +
                       std::to_string(reporting) + " ranks' spill files, with each rank's figures as of its "
                       "last sample and the " + std::to_string(n * width) + " steps every rank finished";
  if (most > fewest) {
    reason += "; rank " + std::to_string(stopped_first) + " stopped first, after " + std::to_string(fewest) +
              " steps (others reached " + std::to_string(most) + ")";
  }
  if (reporting < first.size) {
    std::string list;
    int listed = 0;
    for (int rank = 0; rank < first.size && listed < 20; ++rank) {
      const bool found = std::any_of(ranks.begin(), ranks.end(), [rank](const SpilledRank& r) {
        return r.header.rank == rank;
      });
      if (!found) list += (listed++ ? ", " : "") + std::to_string(rank);
    }
    reason += "; no file from ranks " + list;
  }
  out.facts.incomplete_reason = reason;
  return out;
}

}  // namespace corenoise
