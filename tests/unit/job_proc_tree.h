// A /proc tree in a temporary folder for the in-job library's tests
// (job_proc_sampler_test.cpp, job_node_tasks_test.cpp): files written in
// place (the same inode, as the sampler keeps them open and re-reads them
// with pread), removed with the folder at the end.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace corenoise::job_test {

class ProcTree {
 public:
  ProcTree() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "corenoise-job-proc.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    root_ = pattern;
  }
  ~ProcTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  ProcTree(const ProcTree&) = delete;
  ProcTree& operator=(const ProcTree&) = delete;

  const std::string& root() const { return root_; }

  // Writes `text` to root/relative, truncating in place.
  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path path = std::filesystem::path(root_) / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream file(path, std::ios::out | std::ios::trunc);
    file << text;
    if (!file) ADD_FAILURE() << "cannot write " << path;
  }
  void remove(const std::string& relative) const {
    std::filesystem::remove_all(std::filesystem::path(root_) / relative);
  }

 private:
  std::string root_;
};

// A task's stat line in the kernel's format (52 fields), with the fields
// the parsers read: minflt (10), majflt (12), utime (14), stime (15),
// processor (39).
inline std::string stat_line(long tid, const std::string& comm, int processor,
                             std::uint64_t minor_faults = 0, std::uint64_t major_faults = 0) {
  std::string line = std::to_string(tid) + " (" + comm + ") S";
  for (int field = 4; field <= 52; ++field) {
    std::uint64_t value = 0;
    if (field == 10) value = minor_faults;
    if (field == 12) value = major_faults;
    if (field == 14) value = 7;
    if (field == 15) value = 3;
    if (field == 39) value = static_cast<std::uint64_t>(processor);
    line += field == 8 ? std::string(" -1") : " " + std::to_string(value);
  }
  return line + "\n";
}

// schedstat: ns on the CPU, ns runnable and waiting, timeslices.
inline std::string schedstat_line(std::uint64_t run_ns, std::uint64_t wait_ns = 0) {
  return std::to_string(run_ns) + " " + std::to_string(wait_ns) + " 1\n";
}

}  // namespace corenoise::job_test
