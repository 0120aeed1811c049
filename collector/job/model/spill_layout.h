// A rank's figures kept in a file as the job runs, so that a job that is
// killed (scancel, a time limit, a launcher killing every rank when one
// dies: hydra and Open MPI's mpirun send SIGKILL) still leaves what was
// gathered: `corenoise job --report DIR` builds the report from the files.
// This is the file's layout, the contract between the rank that writes it
// (rank/spill_writer.h) and the rebuild that reads it back
// (rebuild/spill_reader.h); neither depends on the other.
//
// The layout is this build's (native byte order, a version number): the
// files are read back by the same corenoise on the same cluster. Pure data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collector/job/model/rank_measures.h"
#include "collector/job/model/rank_summary.h"

namespace corenoise {

// "cnjob", then the layout's version in the last byte.
inline constexpr char kSpillMagic[8] = {'c', 'n', 'j', 'o', 'b', 0, 0, 3};

// The most bins of steps a rank keeps (rank/interval_recorder.h, whose
// bins merge in pairs past it) and a spill file holds.
inline constexpr std::size_t kMaxStepBins = std::size_t{1} << 16;

struct SpillHeader {
  char magic[8];  // "cnjob\0\0\3"
  std::uint32_t header_bytes;
  std::uint32_t bin_capacity;
  std::int32_t rank;
  std::int32_t size;
  std::int64_t pid;
  char host[64];
  char family[16];
  char program[512];
  std::uint64_t cpu_mask[16];  // CPUs 0..1023
  double started_unix_seconds;
  double updated_unix_seconds;
  double finalized_unix_seconds;  // when the rank reached MPI_Finalize; 0: it did not
  // StepWaits's mirror (rank/interval_recorder.h): steps, steps per bin, bins.
  std::uint64_t step_counts[3];
  double measures[kRankMeasureCount];
  // The rank's summary (rank_summary.h) at each of the last two live
  // epochs it took part in (rank/live_reduction.h), in slot epoch % 2. The
  // epoch number is stored last, and zeroed first: a slot whose number is
  // 0 is being written. Rank 0 keeps the epoch's other figures in
  // kLiveEpochFile; `corenoise job --report` rebuilds the epoch's report
  // from both.
  struct EpochSlot {
    std::int64_t epoch;
    double summary[kRankSummaryDoubles];
  } epochs[2];
};

// Rank 0's part of the last live epoch, in the spill folder beside the
// ranks' files (model/live_epoch.h).
inline constexpr char kLiveEpochFile[] = "live-epoch.json";

// What a spill file may hold (rebuild/spill_reader.h refuses the rest):
// bounds no real job reaches (2^53 collectives at a microsecond each take 285 years; 1e15 is 31
// million years in seconds, or a million times a 1 GHz clock in hertz), so that a damaged or
// foreign file is refused instead of read as figures, and so that no sum or product over a job's
// ranks can overflow.
inline constexpr std::uint64_t kMaxSpillSteps = std::uint64_t{1} << 53;
inline constexpr double kMaxSpillFigure = 1e15;

}  // namespace corenoise
