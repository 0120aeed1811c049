// A rank's figures kept in a file as the job runs, so that a job that is
// killed (scancel, a time limit, a launcher killing every rank when one
// dies: hydra and Open MPI's mpirun send SIGKILL) still leaves what was
// gathered: `corenoise job --report DIR` builds the report from the files.
//
// The file is mapped MAP_SHARED: every step's wait is stored into the
// mapping as it is recorded (two stores), the measures at each sample, and
// the kernel keeps the pages when the process is killed, even by SIGKILL.
// No system call on the per-call path. At a normal end rank 0 has written
// the report and every rank removes its file.
//
// The layout is this build's (native byte order, a version number): the
// files are read back by the same corenoise on the same cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collector/job/interval_recorder.h"
#include "collector/job/rank_measures.h"

namespace corenoise {

struct SpillHeader {
  char magic[8];  // "cnjob\0\0\2"
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
  // StepWaits's mirror (interval_recorder.h): steps, steps per bin, bins.
  std::uint64_t step_counts[3];
  double measures[kRankMeasureCount];
};

class SpillWriter {
 public:
  // Creates DIR/rank-<rank>.spill (DIR too). Throws std::runtime_error.
  SpillWriter(const std::string& dir, int rank, int size, const std::string& family,
              const std::string& program, const std::vector<unsigned>& cpus,
              double started_unix_seconds, std::size_t bin_capacity);
  ~SpillWriter();
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;

  // Where StepWaits mirrors every step (StepWaits::mirror_to).
  double* bins() { return bins_; }
  std::uint64_t* step_counts() { return header_->step_counts; }
  void update(const RankMeasures& measures, double now_unix_seconds);
  // Deletes the file: the report was written.
  void remove();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  void* map_ = nullptr;
  std::size_t bytes_ = 0;
  SpillHeader* header_ = nullptr;
  double* bins_ = nullptr;
};

// What read_spill accepts beyond the layout: bounds no real job reaches
// (2^53 collectives at a microsecond each take 285 years; 1e15 is 31 million
// years in seconds, or a million times a 1 GHz clock in hertz), so that a
// damaged or foreign file is refused instead of read as figures, and so
// that no sum or product over a job's ranks can overflow.
inline constexpr std::uint64_t kMaxSpillSteps = std::uint64_t{1} << 53;
inline constexpr double kMaxSpillFigure = 1e15;

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
// sizeof(SpillHeader) + IntervalRecorder::kMaxStepBins doubles.
std::optional<SpilledRank> read_spill(const std::string& path, std::string* error);

// Empty when `rank` holds what a SpillWriter can have left, else the first
// value that is wrong (the file not named). A killed writer can stop between
// any two of its stores, so this asks only what holds at every one of them:
//   1 <= bin_capacity <= IntervalRecorder::kMaxStepBins;
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
