#include "collector/job/job_output.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "collector/report/pending_file.h"
#include "collector/report/report_page.h"

namespace corenoise {

void write_job_outputs(const JobFacts& facts, const std::vector<RankRecord>& records,
                       const JobOptions& options) {
  const nlohmann::json report = job_report(facts, records);
  std::string written;
  const auto write = [&](const std::string& path, const std::string& content, const char* what) {
    if (path.empty()) return;
    try {
      PendingFile file(path, what);
      file.stream() << content;
      file.commit();
      written += (written.empty() ? "" : ", ") + path;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corenoise job: %s\n", e.what());
    }
  };
  write(options.json_path,
        report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "--json");
  if (!options.html_path.empty()) write(options.html_path, render_report_page(report), "--html");
  if (options.banner) {
    std::string banner = job_banner(report);
    if (!written.empty()) banner += "  report: " + written + "\n";
    std::fputs(banner.c_str(), stderr);
  }
}

}  // namespace corenoise
