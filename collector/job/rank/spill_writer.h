// The rank's side of its spill file (model/spill_layout.h): the file is
// mapped MAP_SHARED, every step's wait is stored into the mapping as it is
// recorded (two stores), the measures at each sample, and the kernel keeps
// the pages when the process is killed, even by SIGKILL. No system call on
// the per-call path. At a normal end rank 0 has written the report and
// every rank removes its file.
//
// Not thread-safe: the recording thread's (job_session.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collector/job/model/rank_measures.h"
#include "collector/job/model/spill_layout.h"

namespace corenoise {

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
  // The rank reached MPI_Finalize (SpillHeader::finalized_unix_seconds).
  void mark_finalized(double now_unix_seconds) {
    header_->finalized_unix_seconds = now_unix_seconds;
  }
  // The rank's summary at a live epoch (SpillHeader::epochs).
  void keep_epoch(long epoch, const RankSummary& summary);
  // A file of the folder's besides the ranks', written whole or not at all
  // (rank 0's kLiveEpochFile). False, with the reason on stderr, if not.
  static bool write_beside(const std::string& dir, const char* name, const std::string& text);
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

}  // namespace corenoise
