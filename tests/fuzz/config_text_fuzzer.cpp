// The config-file parser (apply_config_text) on arbitrary bytes. It must
// either accept them, leaving every option within its documented range, or
// refuse them with a ConfigError naming "FILE:LINE:" of an actual line of
// the input. Any other exception escapes and libFuzzer reports it.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using corenoise::DaemonConfig;

constexpr const char* kSource = "fuzz.conf";

bool within(double x, double lo, double hi) { return std::isfinite(x) && x >= lo && x <= hi; }

// Lines as std::getline counts them: a last line without '\n' still counts.
std::size_t line_count(const std::string& text) {
  const auto newlines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  return newlines + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

void check_error_names_a_line(const std::string& message, const std::string& text) {
  const std::string prefix = std::string(kSource) + ":";
  FUZZ_CHECK(message.starts_with(prefix));
  std::size_t line = 0;
  std::size_t i = prefix.size();
  for (; i < message.size() && message[i] >= '0' && message[i] <= '9'; ++i) {
    line = line * 10 + static_cast<std::size_t>(message[i] - '0');
  }
  FUZZ_CHECK(i < message.size() && message[i] == ':');
  FUZZ_CHECK(line >= 1 && line <= line_count(text));
}

void check_cpu_list(const std::optional<std::vector<unsigned>>& cpus) {
  if (!cpus) return;
  FUZZ_CHECK(std::is_sorted(cpus->begin(), cpus->end()));
  FUZZ_CHECK(std::adjacent_find(cpus->begin(), cpus->end()) == cpus->end());
  FUZZ_CHECK(cpus->empty() || cpus->back() <= 65535);
}

// The ranges of `corenoised --help` (daemon/config.cpp, probe/settings.cpp).
void check_ranges(const DaemonConfig& c) {
  FUZZ_CHECK(within(c.interval_seconds, 0.1, 86400));
  FUZZ_CHECK(within(c.interval_spread, 0, 0.9));
  FUZZ_CHECK(c.concurrent_every >= 0 && c.concurrent_every <= 1000000);
  FUZZ_CHECK(c.socket_mode <= 0777);
  FUZZ_CHECK(within(c.busy_threshold, 0, 1));
  FUZZ_CHECK(!c.socket_path.empty() && !c.state_dir.empty() && !c.topology.empty() &&
             !c.sys_root.empty());
  FUZZ_CHECK(c.listen.rfind(':') != std::string::npos && c.listen.rfind(':') > 0);
  check_cpu_list(c.cpus);
  check_cpu_list(c.housekeeping_cpus);
  const auto& p = c.probe;
  FUZZ_CHECK(!p.probes.empty() && !p.modes.empty());
  FUZZ_CHECK(p.samples >= 1 && p.samples <= 10000);
  FUZZ_CHECK(p.matmul_size >= 1 && p.matmul_size <= 4096);
  FUZZ_CHECK(p.reps >= 1 && p.reps <= 1000000);
  FUZZ_CHECK(within(p.detour_window_seconds, 1e-4, 60));
  FUZZ_CHECK(within(p.detour_threshold_seconds, 0, 0.1));
  FUZZ_CHECK(p.stream_bytes <= (std::uint64_t{1} << 36));
  FUZZ_CHECK(!p.proc_root.empty());
  FUZZ_CHECK(within(p.thresholds.throttled_clock_ratio, 1, 100));
  FUZZ_CHECK(within(p.thresholds.noisy_excess_noise, 0, 1));
  FUZZ_CHECK(within(p.thresholds.slow_ratio, 1, 100));
  FUZZ_CHECK(within(p.thresholds.contended_stream_ratio, 1, 100));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  DaemonConfig config;
  try {
    corenoise::apply_config_text(config, text, kSource);
  } catch (const corenoise::ConfigError& e) {
    check_error_names_a_line(e.what(), text);
    return 0;
  }
  check_ranges(config);
  return 0;
}
