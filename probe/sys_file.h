// The one-value files of /sys (a throttle count, a frequency in kHz, a
// CPPC performance level): one whole decimal number and a newline. One set
// of rules for every reader: anything else, or a file that is not there,
// is "no data" (nullopt), never an error.
#pragma once

#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace corenoise {

// A whole decimal number (a trailing newline or blanks allowed); nullopt
// for anything else, overflow included.
inline std::optional<std::uint64_t> parse_sys_number(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The number in the file at `path`; nullopt if it cannot be read or is not
// one number.
inline std::optional<std::uint64_t> read_sys_number(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return parse_sys_number(text.str());
}

}  // namespace corenoise
