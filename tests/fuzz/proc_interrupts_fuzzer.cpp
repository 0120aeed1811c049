// sum_cpu_column, the parser of /proc/interrupts and /proc/softirqs, and
// corenoise job's (collector/job/rank/interrupt_lines.h), on arbitrary
// bytes. It must never read out of bounds or crash, and a sum it
// returns must belong to a CPU that the header names ("CPU<n>"), since the
// column is found by that name, never by position alone (offline CPUs have
// no column).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collector/job/rank/interrupt_lines.h"
#include "probe/proc_counters.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// True if a blank-separated token of the first line is "CPU" and the number
// `cpu` (leading zeros allowed, as the parser reads numbers).
bool header_names(std::string_view text, unsigned cpu) {
  std::string_view header = text.substr(0, text.find('\n'));
  const std::string number = std::to_string(cpu);
  while (!header.empty()) {
    const std::size_t start = header.find_first_not_of(" \t\r");
    if (start == std::string_view::npos) break;
    header.remove_prefix(start);
    std::string_view token = header.substr(0, header.find_first_of(" \t\r"));
    header.remove_prefix(token.size());
    if (!token.starts_with("CPU")) continue;
    token.remove_prefix(3);
    while (token.size() > 1 && token.front() == '0') token.remove_prefix(1);
    if (token == number) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The fixtures' CPUs, an offline one (2) and one far beyond any column.
  for (unsigned cpu : {0u, 1u, 2u, 3u, 4095u}) {
    if (corenoise::sum_cpu_column(text, cpu)) FUZZ_CHECK(header_names(text, cpu));
  }
  // Every line it keeps has a count per column and an id; the lines
  // between two readings (the text, and the text with its counts bumped
  // where a line's last byte is a digit) are of the columns' CPUs.
  const corenoise::InterruptTables first{corenoise::parse_interrupts(text),
                                         corenoise::parse_softirqs(text)};
  for (const auto& line : first.interrupts.lines) {
    FUZZ_CHECK(line.counts.size() == first.interrupts.cpus.size() && !line.id.empty());
  }
  std::string bumped(text);
  for (std::size_t i = 0; i + 1 < bumped.size(); ++i) {
    if (bumped[i + 1] == '\n' && bumped[i] >= '0' && bumped[i] <= '8') ++bumped[i];
  }
  const corenoise::InterruptTables second{corenoise::parse_interrupts(bumped),
                                          corenoise::parse_softirqs(bumped)};
  for (const auto& line : corenoise::interrupt_lines_between(first, second, 1, 3)) {
    FUZZ_CHECK(line.cpu >= 0 && header_names(text, static_cast<unsigned>(line.cpu)));
    FUZZ_CHECK(line.excess >= corenoise::kMinInterruptExcess && line.count >= line.excess);
  }
  return 0;
}
