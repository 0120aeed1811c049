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

// One space per level where the report holds every rank's record; on one
// line where it holds the named ranks' (job_selection.h): a job of 100,000
// ranks has 1,000-column lateness rows for its nodes and named ranks, and
// a number a line doubled its size (22 MB against 13 MB).
int json_indent(const JobReport& report) {
  return report.ranks.size() < report.ranks_reported ? -1 : 1;
}

// `document` to the one file given; its path, or empty with the reason on
// stderr. Each file on its own: one that cannot be written does not cost
// the other.
std::string write_file(const nlohmann::json& document, int indent, std::optional<std::string> json,
                       std::optional<std::string> html) {
  try {
    ReportOutputs outputs(std::move(json), std::move(html));
    outputs.write(document, indent, "");
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
      const int indent = json_indent(report);
      if (!options.json_path.empty())
        add(write_file(document, indent, options.json_path, std::nullopt));
      if (!options.html_path.empty())
        add(write_file(document, indent, std::nullopt, options.html_path));
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
