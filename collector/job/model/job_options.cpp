#include "collector/job/model/job_options.h"

#include <charconv>
#include <cmath>
#include <string_view>

namespace corenoise {
namespace {

void read_number(const JobEnvironment& lookup, const char* name, double low, double high,
                 double& value, std::string* warnings) {
  const char* text = lookup(name);
  if (text == nullptr || *text == '\0') return;
  const std::string_view view(text);
  double parsed = 0;
  const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), parsed);
  if (ec != std::errc() || end != view.data() + view.size() || !std::isfinite(parsed) ||
      parsed < low || parsed > high) {
    if (warnings != nullptr) {
      *warnings += std::string(name) + "='" + text + "' is not a number in [" +
                   std::to_string(low) + ", " + std::to_string(high) + "], kept " +
                   std::to_string(value) + "; ";
    }
    return;
  }
  value = parsed;
}

void read_count(const JobEnvironment& lookup, const char* name, std::size_t& value,
                std::string* warnings) {
  const char* text = lookup(name);
  if (text == nullptr || *text == '\0') return;
  const std::string_view view(text);
  std::size_t parsed = 0;
  const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), parsed);
  if (ec != std::errc() || end != view.data() + view.size()) {
    if (warnings != nullptr) {
      *warnings += std::string(name) + "='" + text + "' is not a whole number, kept " +
                   std::to_string(value) + "; ";
    }
    return;
  }
  value = parsed;
}

std::string read_text(const JobEnvironment& lookup, const char* name) {
  const char* text = lookup(name);
  return text == nullptr ? std::string() : std::string(text);
}

}  // namespace

JobOptions job_options_from(const JobEnvironment& lookup, std::string* warnings) {
  JobOptions options;
  options.json_path = read_text(lookup, "CORENOISE_JOB_JSON");
  options.html_path = read_text(lookup, "CORENOISE_JOB_HTML");
  options.socket_path = read_text(lookup, "CORENOISE_JOB_SOCKET");
  options.spill_dir = read_text(lookup, "CORENOISE_JOB_SPILL");
  options.live_path = read_text(lookup, "CORENOISE_JOB_LIVE");
  options.program = read_text(lookup, "CORENOISE_JOB_PROGRAM");
  options.family = read_text(lookup, "CORENOISE_JOB_FAMILY");
  read_number(lookup, "CORENOISE_JOB_BUDGET", 1e-6, 0.1, options.budget, warnings);
  read_number(lookup, "CORENOISE_JOB_FINALIZE_TIMEOUT", 0.1, 3600, options.finalize_timeout_seconds,
              warnings);
  read_count(lookup, "CORENOISE_JOB_FULL", options.full_ranks, warnings);
  read_number(lookup, "CORENOISE_JOB_LIVE_INTERVAL", 0, 86400, options.live_interval_seconds,
              warnings);
  // Below a second an epoch would cost more than it tells (docs/job.md).
  if (options.live_interval_seconds > 0 && options.live_interval_seconds < 1)
    options.live_interval_seconds = 1;
  const std::string quiet = read_text(lookup, "CORENOISE_JOB_QUIET");
  options.banner = quiet.empty() || quiet == "0";
  if (const std::string root = read_text(lookup, "CORENOISE_JOB_PROC_ROOT"); !root.empty()) {
    options.proc_root = root;
  }
  if (const std::string root = read_text(lookup, "CORENOISE_JOB_SYS_ROOT"); !root.empty()) {
    options.sys_root = root;
  }
  return options;
}

}  // namespace corenoise
