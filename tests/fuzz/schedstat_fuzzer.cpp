// run_queue_wait_ns, the parser of /proc/thread-self/schedstat, on
// arbitrary bytes: no crash, and a value it returns is the second number
// of the first line (written back in that form, it parses to itself).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "probe/proc_counters.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto wait = corenoise::run_queue_wait_ns(text)) {
    const std::string line = "1 " + std::to_string(*wait) + " 2\n";
    FUZZ_CHECK(corenoise::run_queue_wait_ns(line) == wait);
    FUZZ_CHECK(text.substr(0, text.find('\n')).find(std::to_string(*wait)) !=
               std::string_view::npos);
  }
  return 0;
}
