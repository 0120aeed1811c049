// parse_sys_number, the parser of /sys one-value files (throttle counts,
// cpufreq), on arbitrary bytes: no crash, and a value it returns is exactly
// the decimal digits of the input before its trailing newline and blanks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/sys_counters.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto value = corenoise::parse_sys_number(text);
  if (!value) return 0;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  FUZZ_CHECK(text == std::to_string(*value));
  FUZZ_CHECK(corenoise::parse_sys_number(std::to_string(*value) + "\n") == value);
  return 0;
}
