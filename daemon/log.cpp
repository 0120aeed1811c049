#include "daemon/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

namespace corenoise {
namespace {

std::atomic<int> threshold{static_cast<int>(LogLevel::info)};

}  // namespace

void set_log_level(LogLevel level) { threshold.store(static_cast<int>(level)); }

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > threshold.load()) return;
  std::string line = "<" + std::to_string(static_cast<int>(level)) + ">";
  line += message;
  line += '\n';
  // One write per line, so lines from several threads never interleave.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace corenoise
