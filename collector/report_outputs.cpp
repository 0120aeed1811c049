#include "collector/report_outputs.h"

#include <iostream>
#include <stdexcept>

#include "collector/cluster_report_json.h"
#include "collector/command_line.h"
#include "collector/html_report.h"

namespace corenoise {

ReportOutputs::ReportOutputs(std::optional<std::string> json_path,
                             std::optional<std::string> html_path)
    : json_path_(std::move(json_path)), html_path_(std::move(html_path)) {
  if (json_path_ && *json_path_ != "-") {
    json_file_ = std::make_unique<std::ofstream>(*json_path_);
    if (!*json_file_) throw UsageError("--json: cannot write '" + *json_path_ + "'");
  }
  if (html_path_) {
    html_file_ = std::make_unique<std::ofstream>(*html_path_);
    if (!*html_file_) throw UsageError("--html: cannot write '" + *html_path_ + "'");
  }
}

std::ostream& ReportOutputs::write(const ClusterReport& report, const std::string& command) {
  const bool json_to_stdout = json_path_ && *json_path_ == "-";
  std::ostream& text = json_to_stdout ? std::cerr : std::cout;
  if (json_path_) {
    std::ostream& out = json_file_ ? static_cast<std::ostream&>(*json_file_) : std::cout;
    out << to_json(report).dump(2) << '\n';
    out.flush();
    if (!out) throw std::runtime_error("--json: error writing '" + *json_path_ + "'");
  }
  if (html_file_) {
    *html_file_ << render_html(report);
    html_file_->flush();
    if (!*html_file_) throw std::runtime_error("--html: error writing '" + *html_path_ + "'");
    text << "corenoise " << command << ": report written to " << *html_path_ << '\n';
  }
  return text;
}

}  // namespace corenoise
