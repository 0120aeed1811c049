// The files a cluster command (sweep, collect) writes: --json and --html.
// Each is opened as a temporary file beside its path before anything is
// measured, so that a bad path costs nothing, written once rank 0 has the
// report, and renamed over the path only when complete: a reader (the
// collect timer's consumers, a dashboard) sees the previous report or the
// new one, never a truncated one, and a failed run leaves the previous one.
#pragma once

#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "collector/cluster/cluster_report.h"
#include "collector/report/pending_file.h"

namespace corenoise {

class ReportOutputs {
 public:
  // `json_path` "-" means stdout. Throws std::runtime_error naming a path that
  // cannot be written.
  ReportOutputs(std::optional<std::string> json_path, std::optional<std::string> html_path);

  // Writes the JSON and the HTML, saying where the page went; throws
  // std::runtime_error on a write error. Returns the stream for the text
  // summary: stderr when the JSON took stdout.
  std::ostream& write(const ClusterReport& report, const std::string& command);

 private:
  std::optional<std::string> json_path_;
  std::optional<std::string> html_path_;
  std::unique_ptr<PendingFile> json_file_;
  std::unique_ptr<PendingFile> html_file_;
};

}  // namespace corenoise
