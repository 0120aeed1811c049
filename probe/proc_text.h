// Tokens of the kernel's text tables (/proc/stat, /proc/interrupts,
// schedstat): blank-separated words and whole decimal counts. One set of
// rules for every reader, so that a garbled row is garbage to all of them.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace corenoise::proc_text {

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Splits off the next blank-separated token of `line` (empty at the end).
inline std::string_view next_token(std::string_view& line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  std::size_t j = i;
  while (j < line.size() && !is_blank(line[j])) ++j;
  const std::string_view token = line.substr(i, j - i);
  line.remove_prefix(j);
  return token;
}

// Splits off the next line of `text`, without its newline.
inline std::string_view next_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

// The whole token as a decimal number; nullopt for anything else (signs —
// istream's >> took "-1" as 2^64-1 —, trailing junk, overflow), so that a
// garbled row cannot pass as a count.
inline std::optional<std::uint64_t> to_number(std::string_view token) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

}  // namespace corenoise::proc_text
