#include "collector/report/job_output.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "collector/report/job_banner.h"
#include "collector/report/job_report_json.h"
#include "collector/report/report_outputs.h"

namespace corenoise {

namespace {

// One space per level: a job of thousands of ranks writes a large file.
constexpr int kJobJsonIndent = 1;

// `document` to the one file given; its path, or empty with the reason on
// stderr. Each file on its own: one that cannot be written does not cost
// the other.
std::string write_file(const nlohmann::json& document, std::optional<std::string> json,
                       std::optional<std::string> html) {
  try {
    ReportOutputs outputs(std::move(json), std::move(html));
    outputs.write(document, kJobJsonIndent, "");
    return outputs.written();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corenoise job: %s\n", e.what());
    return {};
  }
}

}  // namespace

void write_job_outputs(const JobReport& report, const JobOptions& options) {
  try {
    std::string written;
    const auto add = [&written](const std::string& path) {
      if (!path.empty()) written += (written.empty() ? "" : ", ") + path;
    };
    if (!options.json_path.empty() || !options.html_path.empty()) {
      const nlohmann::json document = to_json(report);
      if (!options.json_path.empty()) add(write_file(document, options.json_path, std::nullopt));
      if (!options.html_path.empty()) add(write_file(document, std::nullopt, options.html_path));
    }
    if (options.banner) {
      std::string banner = job_banner(report);
      if (!written.empty()) banner += "  report: " + written + "\n";
      std::fputs(banner.c_str(), stderr);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corenoise job: the report could not be made: %s\n", e.what());
  }
}

}  // namespace corenoise
