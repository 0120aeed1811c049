#include "collector/report/report_outputs.h"

#include <iostream>
#include <stdexcept>

#include "collector/report/json_stream.h"
#include "collector/report/report_page.h"

namespace corenoise {

ReportOutputs::ReportOutputs(std::optional<std::string> json_path,
                             std::optional<std::string> html_path)
    : json_path_(std::move(json_path)), html_path_(std::move(html_path)) {
  if (json_path_ && *json_path_ != "-") {
    json_file_ = std::make_unique<PendingFile>(*json_path_, "--json");
  }
  if (html_path_) html_file_ = std::make_unique<PendingFile>(*html_path_, "--html");
}

std::ostream& ReportOutputs::write(const nlohmann::json& document, int indent,
                                   const std::string& command) {
  std::ostream& text = json_path_ && *json_path_ == "-" ? std::cerr : std::cout;
  if (json_path_) {
    if (json_file_) {
      write_json(json_file_->stream(), document, indent);
      json_file_->stream() << '\n';
      json_file_->commit();
    } else {
      write_json(std::cout, document, indent);
      std::cout << '\n' << std::flush;
      if (!std::cout) throw std::runtime_error("--json: error writing to stdout");
    }
  }
  if (html_file_) {
    write_report_page(html_file_->stream(), document);
    html_file_->commit();
    if (!command.empty())
      text << "corenoise " << command << ": report written to " << *html_path_ << '\n';
  }
  return text;
}

std::string ReportOutputs::written() const {
  std::string paths;
  for (const auto* path : {&json_path_, &html_path_}) {
    if (*path) paths += (paths.empty() ? "" : ", ") + (**path == "-" ? "stdout" : **path);
  }
  return paths;
}

}  // namespace corenoise
