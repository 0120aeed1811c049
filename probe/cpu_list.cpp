#include "probe/cpu_list.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace corenoise {
namespace {

constexpr unsigned kMaxCpu = 65535;

// The input in double quotes, control characters escaped: messages go to
// one-line logs, and what() would stop at an embedded NUL.
std::string quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + '"';
}

[[noreturn]] void fail(std::string_view text, std::string_view item, const std::string& why) {
  throw std::invalid_argument("invalid CPU list " + quote(text) + ": item " + quote(item) + " " +
                              why);
}

// Whole string of decimal digits, at most kMaxCpu. Signs, spaces and hex
// are rejected: a typo in a CPU list must not silently pin to CPU 0.
unsigned parse_number(std::string_view text, std::string_view item, std::string_view digits) {
  if (digits.empty()) fail(text, item, "has an empty number: expected N or N-M");
  unsigned value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      fail(text, item, "is not a number: expected N or N-M (decimal CPU numbers)");
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
    // Checked per digit so that a long string cannot overflow `value`.
    if (value > kMaxCpu) fail(text, item, "is above " + std::to_string(kMaxCpu));
  }
  return value;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::vector<unsigned> parse_cpu_list(std::string_view text) {
  // Only the ends are trimmed: files under /sys end in a newline, but a
  // space inside a list is a typo.
  std::string_view body = text;
  while (!body.empty() && is_space(body.front())) body.remove_prefix(1);
  while (!body.empty() && is_space(body.back())) body.remove_suffix(1);

  std::vector<unsigned> cpus;
  if (body.empty()) return cpus;  // e.g. /sys/devices/system/cpu/offline: no CPUs
  for (std::size_t start = 0;;) {
    std::size_t comma = body.find(',', start);
    std::string_view item = body.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) fail(text, item, "is empty: expected N or N-M");
    std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_number(text, item, item));
    } else {
      unsigned first = parse_number(text, item, item.substr(0, dash));
      unsigned last = parse_number(text, item, item.substr(dash + 1));
      if (first > last) fail(text, item, "is a reversed range: expected N-M with N <= M");
      for (unsigned c = first; c <= last; ++c) cpus.push_back(c);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());

  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    // Runs of two are written as ranges too, as the kernel does ("0-1").
    if (j > i) out += '-' + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace corenoise
