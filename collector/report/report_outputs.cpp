#include "collector/report/report_outputs.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "collector/report/cluster_report_json.h"
#include "collector/report/html_report.h"

namespace corenoise {

ReportOutputs::ReportOutputs(std::optional<std::string> json_path,
                             std::optional<std::string> html_path)
    : json_path_(std::move(json_path)), html_path_(std::move(html_path)) {
  if (json_path_ && *json_path_ != "-") {
    json_file_ = std::make_unique<PendingFile>(*json_path_, "--json");
  }
  if (html_path_) html_file_ = std::make_unique<PendingFile>(*html_path_, "--html");
}

std::ostream& ReportOutputs::write(const ClusterReport& report, const std::string& command) {
  const bool json_to_stdout = json_path_ && *json_path_ == "-";
  std::ostream& text = json_to_stdout ? std::cerr : std::cout;
  if (json_path_) {
    if (json_file_) {
      json_file_->stream() << to_json(report).dump(2) << '\n';
      json_file_->commit();
    } else {
      std::cout << to_json(report).dump(2) << '\n' << std::flush;
      if (!std::cout) throw std::runtime_error("--json: error writing to stdout");
    }
  }
  if (html_file_) {
    html_file_->stream() << render_html(report);
    html_file_->commit();
    text << "corenoise " << command << ": report written to " << *html_path_ << '\n';
  }
  return text;
}

}  // namespace corenoise
