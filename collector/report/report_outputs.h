// The files a report is written to, for every command that writes one
// (sweep, collect, job): --json and --html. Each is opened as a temporary
// file beside its path when this object is made, which the sweep and
// collect do before anything is measured and `corenoise job` does once
// before the program starts (and again at its end, on rank 0), so that a
// bad path costs nothing; written once the report is made; and renamed over
// the path only when complete: a reader (the collect timer's consumers, a
// dashboard) sees the previous report or the new one, never a truncated
// one, and a failed run leaves the previous one.
//
// One policy for text that is not UTF-8 (a host name, a thread's or a
// process's name from the kernel): it is replaced by U+FFFD in both files,
// never refused, so that a finished measurement is never lost for a byte.
// A JSON path of "-" is standard output.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "collector/cluster/cluster_report.h"
#include "collector/report/cluster_report_json.h"
#include "collector/report/pending_file.h"

namespace corenoise {

class ReportOutputs {
 public:
  // Throws std::runtime_error naming a path that cannot be written.
  ReportOutputs(std::optional<std::string> json_path, std::optional<std::string> html_path);

  // `document` as JSON, indented by `indent`, and as its page; when the
  // page is written and `command` is not empty, says where on the text
  // stream. Throws std::runtime_error on a write error. Returns the stream
  // for the text summary: stderr when the JSON took stdout.
  std::ostream& write(const nlohmann::json& document, int indent, const std::string& command);

  // A sweep's or a collect's report, `command` naming it ("sweep").
  // Inline: the in-job library, which writes a job's document through the
  // generic write above (report/job_output.cpp), must not reference the
  // sweep's views.
  std::ostream& write(const ClusterReport& report, const std::string& command) {
    return write(to_json(report), 2, command);
  }

  // The paths of the files given, ", "-separated ("stdout" for "-").
  std::string written() const;

 private:
  std::optional<std::string> json_path_;
  std::optional<std::string> html_path_;
  std::unique_ptr<PendingFile> json_file_;
  std::unique_ptr<PendingFile> html_file_;
};

}  // namespace corenoise
