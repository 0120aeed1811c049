// The --html page of a job that is still running (docs/job.md, "Live"),
// as headless Chromium draws it: loaded between two live epochs of a real
// MPICH job, it says which epoch it shows and that the job runs, names the
// late rank in its epoch's window; the job's end rewrites it as the final
// report.
// The launcher is named here, not by mpi_launchers.h: its MpiLauncher
// needs process.h, and one family's page is enough.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tests/unit/chromium_dom.h"

namespace corenoise {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(JobLivePage, ThePageOfARunningJobSaysItsEpochAndNamesTheLateRankInItsWindow) {
  const std::string dir = "/tmp/corenoise-live-page-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/page.html";
  // ~14 s: rank 1 three times as slow from step 100 on; epochs every second;
  // Chromium draws the page in 2-5 s of it.
  const std::string job =
      "cd " + dir + " && (timeout -k 5 120 " + testing::shell_word(MPIEXEC_MPICH_BIN) +
      " -bind-to core -n 2 " + testing::shell_word(CORENOISE_BIN) +
      " job --no-daemon --quiet --live-interval 1 --html " + page + " -- " +
      testing::shell_word(BSP_STEP_APP_BIN) +
      " --steps 1000 --step-products 96 --late-rank 1 --late-steps 100:1000 --late-factor 3"
      " > out.txt 2> err.txt; echo $? > rc.txt) &";
  ASSERT_EQ(std::system(("bash -c " + testing::shell_word(job)).c_str()), 0);
  // A live epoch's page after the slowdown (its window names rank 1).
  std::string live;
  for (int i = 0; i < 600; ++i, usleep(50000)) {
    const std::string text = read_text(page);
    if (text.find("\"late_ranks\":[{\"cause\":\"more-work\"") != std::string::npos &&
        text.find("\"live\":{") != std::string::npos) {
      live = text;
      break;
    }
  }
  // Kept still (#noreload): at a 1 s cadence it would reload within the
  // virtual time Chromium gives it. The reload's arming at the cadence is
  // JobPage.ALiveEpochsPageSaysSoAndReloadsWhileTheJobRuns's.
  const std::string dom = live.empty() ? "" : testing::render_in_chromium(live, "#noreload");
  const bool still_running = !std::filesystem::exists(dir + "/rc.txt");
  for (int i = 0; i < 1200 && !std::filesystem::exists(dir + "/rc.txt"); ++i) usleep(100000);
  const std::string err = read_text(dir + "/err.txt");
  const std::string rc = read_text(dir + "/rc.txt");
  const std::string final_page = read_text(page);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(live.empty()) << "no live page named rank 1 in its window\n" << err;
  EXPECT_TRUE(still_running) << "the job ended before the page was drawn";
  ASSERT_EQ(testing::rendered(dom), "ok") << dom.substr(0, 3000);
  const std::string header =
      testing::text_of(testing::element(dom, "<header id=\"summary\"", "header"));
  EXPECT_NE(header.find("Live: the job so far, at live epoch "), std::string::npos) << header;
  EXPECT_NE(header.find("the job is running, and this page reloads every 1 s."), std::string::npos)
      << header;
  EXPECT_NE(header.find("into the job: rank 1 made the others wait "), std::string::npos) << header;
  EXPECT_NE(header.find("(more-work"), std::string::npos) << header;
  // The job's end rewrote it as the final report: no live line, no reload.
  EXPECT_EQ(rc, "0\n") << err;
  EXPECT_EQ(final_page.find("\"live\":{"), std::string::npos);
  EXPECT_NE(final_page.find("\"live\":null"), std::string::npos);
}

}  // namespace
}  // namespace corenoise
