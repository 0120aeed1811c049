// The files a cluster command (sweep, collect) writes: --json and --html.
// They are opened before anything is measured, so that a bad path costs
// nothing, and written once rank 0 has the report.
#pragma once

#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "collector/cluster_report.h"

namespace corenoise {

class ReportOutputs {
 public:
  // `json_path` "-" means stdout. Throws UsageError naming a path that
  // cannot be written.
  ReportOutputs(std::optional<std::string> json_path, std::optional<std::string> html_path);

  // Writes the JSON and the HTML, saying where the page went; throws
  // std::runtime_error on a write error. Returns the stream for the text
  // summary: stderr when the JSON took stdout.
  std::ostream& write(const ClusterReport& report, const std::string& command);

 private:
  std::optional<std::string> json_path_;
  std::optional<std::string> html_path_;
  std::unique_ptr<std::ofstream> json_file_;
  std::unique_ptr<std::ofstream> html_file_;
};

}  // namespace corenoise
