// A rank's spill file (model/spill_layout.h) read back, checked against
// everything its writer (rank/spill_writer.h) can have left, for
// `corenoise job --report DIR` (spill_report.h). Reads files; no MPI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collector/job/model/spill_layout.h"

namespace corenoise {

// One rank's file, read back.
struct SpilledRank {
  SpillHeader header{};
  std::vector<double> bins;  // header.step_counts[2] of them
  std::vector<unsigned> cpus;
  std::string path;  // the file it came from, which error messages name
};

// The file at `path`, or nullopt with `*error` ("PATH: what is wrong") for
// one this build's SpillWriter cannot have left: not a regular file (never
// blocks on a FIFO or a device), too short or too long for its bin
// capacity, another layout, or a value spilled_rank_problem refuses. Reads
// the file's header and its bins in use, no more: at most
// sizeof(SpillHeader) + kMaxStepBins doubles.
std::optional<SpilledRank> read_spill(const std::string& path, std::string* error);

// Empty when `rank` holds what a SpillWriter can have left, else the first
// value that is wrong (the file not named). A killed writer can stop between
// any two of its stores, so this asks only what holds at every one of them:
//   1 <= bin_capacity <= kMaxStepBins;
//   0 <= rank < size; pid > 0;
//   host, family and program NUL-terminated in their fields; host and
//     family without control characters (the banner prints them); family
//     not empty;
//   both times and every measure finite and within +-kMaxSpillFigure (the
//     times and the bins' waits not negative; a measure may be: off-CPU time
//     is a difference of two clocks);
//   steps <= kMaxSpillSteps; steps per bin a power of two, no more than the
//     steps (or 1); bins in use <= bin_capacity, == bins.size(), and
//     steps <= (bins in use + 1) * steps per bin (the last step's bin may be
//     counted before it is). All three counts 0 is a rank killed before its
//     steps were attached to the file: no steps.
std::string spilled_rank_problem(const SpilledRank& rank);

}  // namespace corenoise
