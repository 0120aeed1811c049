// Every view of each report kind, byte for byte, against the files checked
// in beside this test: the sweep's JSON, terminal summary and page from
// tests/tools/sample_reports.h's sweep, and the job's JSON, banner and page
// from its job's records. A change to a model or a view that changes what
// a user or a script reads shows here as a diff of a file.
//
// After an intended change of output, write the files anew and read the
// diff before committing it:
//   CORENOISE_UPDATE_GOLDEN=1 build/tests/corenoise_golden_tests
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "collector/job/model/job_report.h"
#include "collector/report/cluster_report_json.h"
#include "collector/report/job_banner.h"
#include "collector/report/job_report_json.h"
#include "collector/report/report_page.h"
#include "collector/report/sweep_summary.h"
#include "tests/tools/sample_reports.h"

namespace corenoise {
namespace {

std::string golden_path(const std::string& name) {
  return std::string(CORENOISE_GOLDEN_DIR) + "/" + name;
}

// Compares `actual` with the golden file `name` (or writes it, when asked),
// reporting the first line that differs rather than two whole pages.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (std::getenv("CORENOISE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing (CORENOISE_UPDATE_GOLDEN=1 writes it)";
  const std::string expected{std::istreambuf_iterator<char>(in), {}};
  if (expected == actual) return;
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 1;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, el));
    const bool more_a = static_cast<bool>(std::getline(a, al));
    if (!more_e && !more_a) break;
    if (el != al || more_e != more_a) {
      // A page's JSON is one long line: show where in it.
      std::size_t column = 0;
      while (column < el.size() && column < al.size() && el[column] == al[column]) ++column;
      const std::size_t from = column > 60 ? column - 60 : 0;
      ADD_FAILURE() << name << " differs at line " << line << ", column " << column + 1
                    << ":\n  golden: " << el.substr(from, 160)
                    << "\n  now:    " << al.substr(from, 160);
      return;
    }
  }
  ADD_FAILURE() << name << " differs (line endings or a final newline)";
}

TEST(GoldenSweep, JsonSummaryAndPage) {
  const ClusterReport report = sample_sweep();
  expect_golden("sweep.json", to_json(report).dump(2) + "\n");
  std::ostringstream summary;
  print_sweep_summary(summary, report, 10, false);
  expect_golden("sweep.txt", summary.str());
  expect_golden("sweep.html", render_report_page(to_json(report)));
}

TEST(GoldenJob, JsonBannerAndPage) {
  const SampleJob job = sample_job();
  const JobReport report = build_job_report(job.facts, job.records);
  const nlohmann::json json = to_json(report);
  expect_golden("job.json",
                json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  expect_golden("job.txt", job_banner(report));
  expect_golden("job.html", render_report_page(json));
}

}  // namespace
}  // namespace corenoise
