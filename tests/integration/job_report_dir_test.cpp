// The real `corenoise job --report DIR` on spill directories that are not
// one job's complete, good files: each must exit 1 within seconds, name
// the file (or the directory) on stderr and write no report. No MPI: the
// files are written by the real SpillWriter (tests/unit/job_spill_files.h),
// as a killed job's ranks leave them, and then damaged.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "collector/job/rebuild/spill_reader.h"
#include "process.h"
#include "tests/unit/job_spill_files.h"

namespace corenoise::testing {
namespace {

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command

struct ReportRun {
  CommandResult result;
  bool wrote_json = false;
};

// `corenoise job --report DIR --json DIR/../report.json`, under a timeout
// that turns a hang into exit 124.
ReportRun report(const TempDir& dir, const std::string& spills) {
  const std::string json = dir.file("report.json");
  ReportRun run;
  run.result =
      run_command("timeout -k 5 30 " + kCorenoise + " job --report " + spills + " --json " + json);
  run.wrote_json = std::filesystem::exists(json);
  return run;
}

void expect_refused(const ReportRun& run, const std::string& named, const std::string& why) {
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  EXPECT_NE(run.result.err.find(named), std::string::npos)
      << "stderr names " << named << ": " << run.result.err;
  EXPECT_NE(run.result.err.find(why), std::string::npos) << run.result.err;
  EXPECT_FALSE(run.wrote_json) << "no report from a refused directory";
}

class JobReportDir : public ::testing::Test {
 protected:
  TempDir dir_{"job-report"};
  const std::string spills_ = dir_.file("job.json.ranks");
  std::string good_ = write_spill(spills_, {.rank = 0, .size = 2, .steps = 30});
};

// The check that the good file is good: with its partner, a report.
TEST_F(JobReportDir, TwoGoodFilesMakeAReport) {
  write_spill(spills_, {.rank = 1, .size = 2, .steps = 25});
  const ReportRun run = report(dir_, spills_);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_TRUE(run.wrote_json);
  EXPECT_NE(run.result.err.find("INCOMPLETE"), std::string::npos) << run.result.err;
}

TEST_F(JobReportDir, ATruncatedFileIsNamed) {
  const std::string cut = write_spill(spills_, {.rank = 1, .size = 2});
  std::filesystem::resize_file(cut, sizeof(SpillHeader) + 40);
  expect_refused(report(dir_, spills_), cut, "truncated");
}

TEST_F(JobReportDir, AnOversizedFileIsNamed) {
  const std::string big = write_spill(spills_, {.rank = 1, .size = 2});
  std::filesystem::resize_file(big, std::uintmax_t{1} << 30);  // sparse: 1 GiB on no disk
  expect_refused(report(dir_, spills_), big, "longer than a spill file");
}

TEST_F(JobReportDir, AFileOfAnotherJobBesideAGoodOneIsNamed) {
  const std::string other = write_spill(spills_, {.rank = 3, .size = 4});
  expect_refused(report(dir_, spills_), other, "is from another job than " + good_);
}

TEST_F(JobReportDir, AFileOfAnEarlierJobOfTheSameShapeIsNamed) {
  const std::string other = write_spill(spills_, {.rank = 1, .size = 2, .started = 1.8e9 - 7200});
  expect_refused(report(dir_, spills_), other, "started 7200 s earlier");
}

TEST_F(JobReportDir, ARandomFileIsNamed) {
  std::filesystem::remove(good_);
  std::mt19937 random(11);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  const std::string noise = spills_ + "/rank-0.spill";
  std::ofstream(noise, std::ios::binary) << bytes;
  expect_refused(report(dir_, spills_), noise, "not a spill file");
}

TEST_F(JobReportDir, AFileWithANaNMeasureIsNamed) {
  const std::string bad = write_spill(spills_, {.rank = 1, .size = 2});
  patch_spill_field(bad, offsetof(SpillHeader, measures), std::numeric_limits<double>::quiet_NaN());
  expect_refused(report(dir_, spills_), bad, "measure 0 of");
}

TEST_F(JobReportDir, AFifoNamedLikeASpillFileDoesNotHang) {
  const std::string fifo = spills_ + "/rank-1.spill";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(report(dir_, spills_), fifo, "not a regular file");
}

TEST_F(JobReportDir, AnEmptyDirectoryIsNamed) {
  std::filesystem::remove(good_);
  expect_refused(report(dir_, spills_), spills_, "no spill file");
}

TEST_F(JobReportDir, AMissingDirectoryIsNamed) {
  const std::string missing = dir_.file("no-such.ranks");
  expect_refused(report(dir_, missing), missing, "cannot read");
}

}  // namespace
}  // namespace corenoise::testing
