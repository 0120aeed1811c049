// A report file written under a temporary name beside its path and renamed
// over it by commit(): a reader (a dashboard, the collect timer's
// consumers) sees the previous file or the new one, never a truncated one,
// and a run that fails before commit() leaves the previous one.
#pragma once

#include <fstream>
#include <string>

namespace corenoise {

class PendingFile {
 public:
  // `option` names the file in errors ("--json"). Throws std::runtime_error
  // when the temporary file cannot be created.
  PendingFile(const std::string& path, const std::string& option);
  ~PendingFile();  // removes the temporary file if never committed
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  std::ofstream& stream() { return stream_; }
  // Closes and renames into place; throws std::runtime_error on a write error.
  void commit();

 private:
  std::string path_, temporary_, option_;
  std::ofstream stream_;
  bool committed_ = false;
};

}  // namespace corenoise
