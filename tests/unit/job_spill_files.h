// Spill files for tests, written by the real SpillWriter and StepWaits as a
// job's ranks write them, and bytes changed afterwards to make the bad
// ones: a field at its offset in SpillHeader, the file cut or lengthened.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "collector/job/rank/interval_recorder.h"
#include "collector/job/rank/spill_writer.h"

namespace corenoise::testing {

struct SpillPlan {
  int rank = 0;
  int size = 2;
  int steps = 10;          // steps recorded before the "kill"
  std::size_t bins = 16;   // the file's capacity: small, so that steps merge
  double started = 1.8e9;  // unix seconds
  std::string family = "mpich";
  std::string program = "./app";
};

// DIR/rank-<rank>.spill as a rank killed after `steps` steps leaves it;
// step k waits 1 ms × ((k + rank) % 5). Returns its path.
inline std::string write_spill(const std::string& dir, const SpillPlan& plan) {
  SpillWriter writer(dir, plan.rank, plan.size, plan.family, plan.program,
                     {static_cast<unsigned>(plan.rank)}, plan.started, plan.bins);
  StepWaits waits(plan.bins);
  waits.mirror_to(writer.bins(), writer.step_counts());
  for (int step = 0; step < plan.steps; ++step) waits.add(1e-3 * ((step + plan.rank) % 5));
  RankMeasures m;
  m.elapsed_seconds = 2;
  m.compute_seconds = 1.5;
  m.compute_cpu_seconds = 1.4;
  m.wait_seconds = 0.5;
  m.wait_cpu_seconds = 0.5;
  m.off_cpu_seconds = off_cpu(m);
  m.steps = plan.steps;
  m.clock_hz = 3e9;
  writer.update(m, plan.started + 2);
  return writer.path();
}

// Writes `size` bytes over the file at `offset`.
inline void patch_spill(const std::string& path, std::size_t offset, const void* data,
                        std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool ok =
      fd >= 0 && ::pwrite(fd, data, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("cannot patch " + path);
}

template <typename T>
void patch_spill_field(const std::string& path, std::size_t offset, const T& value) {
  patch_spill(path, offset, &value, sizeof(value));
}

inline void resize_spill(const std::string& path, std::uintmax_t bytes) {
  std::filesystem::resize_file(path, bytes);
}

// A fresh directory under the system's temporary one, removed with it.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("corenoise-" + name + ".XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace corenoise::testing
