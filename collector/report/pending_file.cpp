#include "collector/report/pending_file.h"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace corenoise {

PendingFile::PendingFile(const std::string& path, const std::string& option)
    : path_(path),
      temporary_(path + ".tmp." + std::to_string(::getpid())),
      option_(option),
      stream_(temporary_) {
  if (!stream_) throw std::runtime_error(option_ + ": cannot write '" + path_ + "'");
}

PendingFile::~PendingFile() {
  if (!committed_) std::remove(temporary_.c_str());
}

void PendingFile::commit() {
  stream_.close();
  if (!stream_ || std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    throw std::runtime_error(option_ + ": error writing '" + path_ + "'");
  }
  committed_ = true;
}

}  // namespace corenoise
