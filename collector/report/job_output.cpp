#include "collector/job/job_output.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "collector/report/job_banner.h"
#include "collector/report/report_outputs.h"

namespace corenoise {

namespace {

std::optional<std::string> given(const std::string& path) {
  return path.empty() ? std::nullopt : std::optional<std::string>(path);
}

// Writes the files of `json` and `html` given; the paths written, or empty
// with the reason on stderr.
std::string write_files(const JobReport& report, std::optional<std::string> json,
                        std::optional<std::string> html) {
  try {
    return ReportOutputs(std::move(json), std::move(html)).write(report);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corenoise job: %s\n", e.what());
    return {};
  }
}

}  // namespace

void write_job_outputs(const JobReport& report, const JobOptions& options) {
  const auto json = given(options.json_path), html = given(options.html_path);
  std::string written;
  if (json && html) {
    written = write_files(report, json, html);
    // One file that cannot be written does not cost the other.
    if (written.empty()) {
      const std::string a = write_files(report, json, std::nullopt);
      const std::string b = write_files(report, std::nullopt, html);
      written = a + (a.empty() || b.empty() ? "" : ", ") + b;
    }
  } else if (json || html) {
    written = write_files(report, json, html);
  }
  if (options.banner) {
    std::string banner = job_banner(report);
    if (!written.empty()) banner += "  report: " + written + "\n";
    std::fputs(banner.c_str(), stderr);
  }
}

}  // namespace corenoise
