#include "collector/job/rebuild/spill_report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "collector/job/model/live_epoch.h"
#include "collector/job/model/step_math.h"

namespace corenoise {
namespace {

// Errors list this many files, then how many more: a dead node's
// hundred files need no hundred lines.
constexpr std::size_t kListedProblems = 10;

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (std::size_t i = 0; i < lines.size() && i < kListedProblems; ++i) {
    text += (i ? "; " : "") + lines[i];
  }
  if (lines.size() > kListedProblems) {
    text += "; and " + std::to_string(lines.size() - kListedProblems) + " more";
  }
  return text;
}

std::string name_of(const SpilledRank& r) {
  return r.path.empty() ? "the file of rank " + std::to_string(r.header.rank) : r.path;
}

// Why `r` is not of the job `reference` is of, or empty.
std::string other_job(const SpilledRank& r, const SpilledRank& reference) {
  const SpillHeader& a = r.header;
  const SpillHeader& b = reference.header;
  std::string why;
  if (a.size != b.size) {
    why = "a job of " + std::to_string(a.size) + " ranks, not " + std::to_string(b.size);
  } else if (std::strcmp(a.family, b.family) != 0) {
    why = "MPI family " + std::string(a.family) + ", not " + b.family;
  } else if (std::strcmp(a.program, b.program) != 0) {
    why = "program '" + std::string(a.program) + "', not '" + b.program + "'";
  } else if (std::fabs(a.started_unix_seconds - b.started_unix_seconds) > kSameJobStartSeconds) {
    const double apart = a.started_unix_seconds - b.started_unix_seconds;
    why = "started " + std::to_string(static_cast<long long>(std::fabs(apart))) + " s " +
          (apart < 0 ? "earlier" : "later");
  }
  return why.empty()
             ? why
             : name_of(r) + " is from another job than " + name_of(reference) + " (" + why + ")";
}

// Every bin of `r` that the first `bins` bins of width `width` cover,
// summed into those bins (widths are powers of two, so finer bins merge
// exactly). `bins` * `width` <= the steps `r` holds, checked by the caller.
std::vector<double> merged_bins(const SpilledRank& r, std::uint64_t width, std::size_t bins) {
  const std::uint64_t factor = width / std::max<std::uint64_t>(1, r.header.step_counts[1]);
  std::vector<double> merged(bins, 0.0);
  for (std::size_t i = 0; i < bins; ++i) {
    for (std::uint64_t j = 0; j < factor; ++j) merged[i] += r.bins[i * factor + j];
  }
  return merged;
}

// The steps whose bins `r` holds: a killed writer may have counted a
// step whose bin it had not yet counted.
std::uint64_t held_steps(const SpilledRank& r) {
  const std::uint64_t per_bin = std::max<std::uint64_t>(1, r.header.step_counts[1]);
  const std::uint64_t bins = r.bins.size();
  const std::uint64_t held =
      per_bin > kMaxSpillSteps / std::max<std::uint64_t>(1, bins) ? kMaxSpillSteps : bins * per_bin;
  return std::min(r.header.step_counts[0], held);
}

// The ranks of [0, size) that no file holds: the first 20, and how many.
std::string missing_ranks(const std::vector<SpilledRank>& ranks, int size) {
  std::vector<int> present;
  for (const auto& r : ranks) present.push_back(r.header.rank);
  std::sort(present.begin(), present.end());
  std::string list;
  int listed = 0;
  // Stops after 20 missing: at most ranks.size() + 20 turns whatever `size` is.
  for (int rank = 0; rank < size && listed < 20; ++rank) {
    if (!std::binary_search(present.begin(), present.end(), rank)) {
      list += (listed++ ? ", " : "") + std::to_string(rank);
    }
  }
  const long missing = static_cast<long>(size) - static_cast<long>(present.size());
  if (missing > listed) list += " and " + std::to_string(missing - listed) + " more";
  return list;
}

}  // namespace

std::vector<std::string> spill_job_problems(const std::vector<SpilledRank>& ranks) {
  std::vector<std::string> problems;
  if (ranks.empty()) return problems;
  std::vector<const SpilledRank*> order;
  for (const auto& r : ranks) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const SpilledRank* a, const SpilledRank* b) {
    return a->header.rank < b->header.rank;
  });
  const SpilledRank& reference = *order.front();
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (order[i]->header.rank == order[i - 1]->header.rank) {
      problems.push_back(name_of(*order[i]) + " holds rank " +
                         std::to_string(order[i]->header.rank) + ", as " + name_of(*order[i - 1]) +
                         " does");
    } else if (std::string why = other_job(*order[i], reference); !why.empty()) {
      problems.push_back(std::move(why));
    }
  }
  return problems;
}

std::vector<SpilledRank> read_spill_dir(const std::string& dir, std::string* problems) {
  std::vector<SpilledRank> ranks;
  std::vector<std::string> unusable;
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  for (const std::filesystem::directory_iterator end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("rank-", 0) != 0 || it->path().extension() != ".spill") continue;
    const std::string path = it->path().string();
    // rank-N.spill, N as the writer spells it: no sign, no leading zero.
    const std::string digits = name.substr(5, name.size() - 5 - 6);
    const bool canonical =
        !digits.empty() && digits.size() <= 10 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        (digits == "0" || digits[0] != '0');
    std::string problem;
    if (!canonical) {
      unusable.push_back(path + ": named like a spill file, but '" + digits + "' is not a rank");
    } else if (auto rank = read_spill(path, &problem)) {
      if (std::to_string(rank->header.rank) != digits) {
        unusable.push_back(path + ": holds rank " + std::to_string(rank->header.rank) +
                           " (renamed, or copied from another directory?)");
      } else {
        ranks.push_back(std::move(*rank));
      }
    } else {
      unusable.push_back(problem);
    }
  }
  if (error) throw std::runtime_error("cannot read " + dir + ": " + error.message());
  std::sort(ranks.begin(), ranks.end(), [](const SpilledRank& a, const SpilledRank& b) {
    return a.header.rank < b.header.rank;
  });
  std::sort(unusable.begin(), unusable.end());
  for (auto& problem : spill_job_problems(ranks)) unusable.push_back(std::move(problem));
  if (!unusable.empty()) {
    throw std::runtime_error(joined(unusable) + "; a report is built from every rank-N.spill in " +
                             dir +
                             " or none: move the files above out of it to report without them");
  }
  if (problems != nullptr) {
    for (const auto& r : ranks) {
      if (r.header.updated_unix_seconds == 0) {
        *problems += (problems->empty() ? "" : "; ") + r.path +
                     ": no sample yet (the rank was stopped as it started); its figures are zero";
      }
    }
  }
  return ranks;
}

namespace {

// `unsorted`, checked (each rank, and as one job's) and sorted by rank
// without a copy: a large job's bins take gigabytes. Throws
// std::invalid_argument naming the files.
std::vector<const SpilledRank*> checked_by_rank(const std::vector<SpilledRank>& unsorted) {
  std::vector<std::string> problems;
  for (const auto& r : unsorted) {
    if (std::string why = spilled_rank_problem(r); !why.empty()) {
      problems.push_back(name_of(r) + ": " + why);
    }
  }
  for (auto& why : spill_job_problems(unsorted)) problems.push_back(std::move(why));
  if (!problems.empty()) throw std::invalid_argument(joined(problems));
  std::vector<const SpilledRank*> ranks;
  for (const auto& r : unsorted) ranks.push_back(&r);
  std::sort(ranks.begin(), ranks.end(), [](const SpilledRank* a, const SpilledRank* b) {
    return a->header.rank < b->header.rank;
  });
  return ranks;
}

// The steps every rank finished, at the coarsest rank's bin width: each
// rank's bins, and per bin the least wait (with its rank), the next to
// least, the most and the sum, as the reduction at MPI_Finalize has them.
struct CommonSteps {
  std::uint64_t width = 1;
  std::size_t bins_per_rank = 0;
  std::vector<std::vector<double>> bins;  // per rank, in rank order
  std::vector<double> minimum, maximum, sum;
  std::vector<int> last;       // the rank of each bin's least wait: the last to arrive
  std::vector<double> second;  // each bin's next-to-least wait: the next-to-last's
};
CommonSteps common_steps(const std::vector<const SpilledRank*>& ranks) {
  CommonSteps c;
  std::uint64_t held = std::numeric_limits<std::uint64_t>::max();
  for (const SpilledRank* r : ranks) {
    c.width = std::max<std::uint64_t>(c.width, r->header.step_counts[1]);
    held = std::min(held, held_steps(*r));
  }
  // Every rank holds these bins: n * width <= its held steps.
  const std::size_t n = static_cast<std::size_t>(held / c.width);
  c.bins_per_rank = n;
  for (const SpilledRank* r : ranks) c.bins.push_back(merged_bins(*r, c.width, n));
  c.minimum.assign(n, std::numeric_limits<double>::infinity());
  c.second.assign(n, std::numeric_limits<double>::infinity());
  c.maximum.assign(n, 0.0);
  c.sum.assign(n, 0.0);
  c.last.assign(n, -1);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const double w = c.bins[k][i];
      if (w < c.minimum[i]) {
        c.second[i] = c.minimum[i];
        c.minimum[i] = w;
        c.last[i] = ranks[k]->header.rank;
      } else {
        c.second[i] = std::min(c.second[i], w);
      }
      c.maximum[i] = std::max(c.maximum[i], w);
      c.sum[i] += w;
    }
  }
  return c;
}

// A rank's record, as of its last sample, with the waiting it
// caused at the common steps.
RankRecord spilled_record(const SpilledRank& r, const CommonSteps& common, int reporting) {
  RankRecord record;
  record.rank = r.header.rank;
  record.host = r.header.host;
  record.cpus = r.cpus;
  record.pid = r.header.pid;
  std::copy_n(r.header.measures, kRankMeasureCount, as_array(record.measures));
  record.measures.wait_caused_seconds =
      wait_caused(r.header.rank, reporting, common.minimum, common.last, common.sum);
  return record;
}

// Why the report is incomplete: the job's end, what it is built from and
// which rank stopped first, or sent no file.
std::string incomplete_reason(const std::vector<SpilledRank>& unsorted,
                              const std::vector<const SpilledRank*>& ranks, long steps) {
  std::uint64_t fewest = std::numeric_limits<std::uint64_t>::max(), most = 0;
  int stopped_first = -1;
  for (const SpilledRank* r : ranks) {
    if (r->header.step_counts[0] < fewest) {
      fewest = r->header.step_counts[0];
      stopped_first = r->header.rank;
    }
    most = std::max<std::uint64_t>(most, r->header.step_counts[0]);
  }
  const int size = ranks.front()->header.size;
  std::string reason =
      "the job ended before MPI_Finalize (killed, or a rank was lost): built from " +
      std::to_string(ranks.size()) +
      " ranks' spill files, with each rank's figures as of its "
      "last sample and the " +
      std::to_string(steps) + " steps every rank finished";
  if (most > fewest) {
    reason += "; rank " + std::to_string(stopped_first) + " stopped first, after " +
              std::to_string(fewest) + " steps (others reached " + std::to_string(most) + ")";
  }
  if (static_cast<int>(ranks.size()) < size) {
    reason += "; no file from ranks " + missing_ranks(unsorted, size);
  }
  return reason;
}

}  // namespace

SpillReport report_from_spills(const std::vector<SpilledRank>& unsorted) {
  SpillReport out;
  if (unsorted.empty()) return out;
  const std::vector<const SpilledRank*> ranks = checked_by_rank(unsorted);
  const SpillHeader& first = ranks.front()->header;
  out.facts.version = CORENOISE_VERSION;
  out.facts.program = first.program;
  out.facts.family = first.family;
  out.facts.started_unix_seconds = first.started_unix_seconds;
  out.facts.ranks_total = first.size;

  const CommonSteps common = common_steps(ranks);
  const int reporting = static_cast<int>(ranks.size());
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    out.facts.lateness.push_back(lateness_columns(common.bins[k], common.maximum,
                                                  static_cast<long>(common.width),
                                                  &out.facts.steps_per_column));
    out.records.push_back(spilled_record(*ranks[k], common, reporting));
  }
  out.facts.steps = static_cast<long>(common.bins_per_rank * common.width);
  out.facts.savings = savings_by_rank(common.minimum, common.last, common.second);
  out.facts.incomplete_reason = incomplete_reason(unsorted, ranks, out.facts.steps);
  return out;
}

std::optional<SpillReport> report_from_live_epoch(const std::string& dir,
                                                  const std::vector<SpilledRank>& ranks,
                                                  std::string* why) {
  const std::string path = (std::filesystem::path(dir) / kLiveEpochFile).string();
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto refuse = [&](const std::string& reason) {
    if (why != nullptr) *why = path + ": " + reason + "; the report is the spill files' alone";
    return std::nullopt;
  };
  LiveEpoch epoch;
  try {
    epoch = live_epoch_from_text(text);
  } catch (const std::exception& e) {
    return refuse(std::string("not a live epoch's file (") + e.what() + ")");
  }
  JobFacts& facts = epoch.facts;
  const auto first = std::find_if(ranks.begin(), ranks.end(),
                                  [](const SpilledRank& r) { return r.header.rank == 0; });
  if (first == ranks.end() || first->header.started_unix_seconds != facts.started_unix_seconds ||
      first->header.size != facts.ranks_total)
    return refuse("another job's (its start or size is not rank 0's spill file's)");
  SpillReport out;
  out.summaries.resize(ranks.size());
  for (const SpilledRank& rank : ranks) {
    const long number = facts.live->epoch;
    const SpillHeader::EpochSlot& slot = rank.header.epochs[number % 2];
    const auto r = static_cast<std::size_t>(rank.header.rank);
    if (slot.epoch != number || r >= out.summaries.size())
      return refuse("rank " + std::to_string(rank.header.rank) + " has no summary of epoch " +
                    std::to_string(number));
    std::memcpy(as_array(out.summaries[r]), slot.summary, sizeof(slot.summary));
    if (!sound(out.summaries[r], facts.ranks_total) ||
        out.summaries[r].number() != rank.header.rank)
      return refuse("rank " + std::to_string(rank.header.rank) + "'s summary is not sound");
  }
  facts.live->rebuilt = true;
  facts.live->ranks_finalized =
      static_cast<int>(std::count_if(ranks.begin(), ranks.end(), [](const SpilledRank& r) {
        return r.header.finalized_unix_seconds > 0;
      }));
  out.facts = std::move(facts);
  out.records = std::move(epoch.records);
  return out;
}

}  // namespace corenoise
