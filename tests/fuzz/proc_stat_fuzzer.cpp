// The two parsers of /proc/stat on arbitrary bytes: steal_ticks (the probe's
// steal time) and parse_cpu_times (the daemon's busy CPUs). The input is cut
// in two at its first form feed (or its middle) to make two readings, so
// that busy_fraction also sees arbitrary pairs. Invariants: a CPU's busy
// ticks never exceed its total, and a busy share is within [0, 1].
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/busy_cpus.h"
#include "probe/proc_counters.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check_times(const std::map<unsigned, corenoise::CpuTimes>& times) {
  for (const auto& [cpu, t] : times) FUZZ_CHECK(t.busy <= t.total);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = text.find('\f') != std::string_view::npos ? text.find('\f') : size / 2;
  const std::string_view first = text.substr(0, cut);
  const std::string_view second = text.substr(cut);

  const auto before = corenoise::parse_cpu_times(first);
  const auto after = corenoise::parse_cpu_times(second);
  check_times(before);
  check_times(after);
  for (const auto& [cpu, t] : after) {
    if (const auto share = corenoise::busy_fraction(before, after, cpu)) {
      FUZZ_CHECK(*share >= 0 && *share <= 1);
    }
    FUZZ_CHECK(!corenoise::busy_fraction(after, after, cpu));  // no time passed
  }

  // A steal count is one of the input's numbers, not something computed.
  for (unsigned cpu : {0u, 1u, 2u, 3u}) {
    if (const auto steal = corenoise::steal_ticks(text, cpu)) {
      FUZZ_CHECK(text.find(std::to_string(*steal)) != std::string_view::npos);
    }
  }
  return 0;
}
