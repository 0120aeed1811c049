// Spill files read back (collector/job/rebuild/spill_reader.h) and the report built
// from them (spill_report.h): what a killed job's writer leaves is read as
// it wrote it; anything else is refused naming the file and what is wrong,
// within bounded time and memory.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "collector/job/rebuild/spill_reader.h"
#include "collector/job/rebuild/spill_report.h"
#include "job_spill_files.h"

namespace corenoise {
namespace {

using testing::patch_spill;
using testing::patch_spill_field;
using testing::SpillPlan;
using testing::TempDir;
using testing::write_spill;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string refusal(const std::string& path) {
  std::string error;
  const auto rank = read_spill(path, &error);
  EXPECT_FALSE(rank.has_value()) << path << " was accepted";
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << "the error names the file: " << error;
  return error;
}

std::string dir_refusal(const std::string& dir) {
  try {
    read_spill_dir(dir, nullptr);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << dir << " was read";
  return "";
}

TEST(JobSpillFile, WhatTheWriterWroteReadsBack) {
  TempDir dir("spill");
  const std::string path =
      write_spill(dir.path(), {.rank = 1, .size = 3, .steps = 40, .program = "./app -n 3"});
  std::string error;
  const auto rank = read_spill(path, &error);
  ASSERT_TRUE(rank) << error;
  EXPECT_EQ(rank->path, path);
  EXPECT_EQ(rank->header.rank, 1);
  EXPECT_EQ(rank->header.size, 3);
  EXPECT_STREQ(rank->header.family, "mpich");
  EXPECT_STREQ(rank->header.program, "./app -n 3");
  EXPECT_EQ(rank->cpus, std::vector<unsigned>{1});
  // 40 steps in 16 bins: merged twice, 4 steps per bin, 10 bins in use.
  EXPECT_EQ(rank->header.step_counts[0], 40u);
  EXPECT_EQ(rank->header.step_counts[1], 4u);
  ASSERT_EQ(rank->bins.size(), 10u);
  // Steps 0-3 of rank 1 wait 1, 2, 3, 4 ms.
  EXPECT_NEAR(rank->bins[0], 0.010, 1e-12);
  EXPECT_EQ(spilled_rank_problem(*rank), "");
}

// Every field a damaged or foreign file can get wrong, each refused with a
// message that names the file and says what is wrong.
TEST(JobSpillFile, EveryBadValueIsRefusedNamingTheFile) {
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    const char* expected;
  };
  const auto at = [](auto offset, auto value) {
    return [offset, value](const std::string& path) { patch_spill_field(path, offset, value); };
  };
  const std::size_t counts = offsetof(SpillHeader, step_counts);
  const std::size_t bins = sizeof(SpillHeader);
  const std::size_t full = sizeof(SpillHeader) + 16 * sizeof(double);
  const std::vector<Case> cases = {
      {"empty", [](const std::string& p) { testing::resize_spill(p, 0); }, "empty"},
      {"cut in the header", [](const std::string& p) { testing::resize_spill(p, 100); },
       "truncated: 100 bytes"},
      {"cut in the bins", [full](const std::string& p) { testing::resize_spill(p, full - 1); },
       "truncated"},
      {"a byte longer", [full](const std::string& p) { testing::resize_spill(p, full + 1); },
       "longer than a spill file"},
      {"another magic", at(0, 'x'), "not a spill file"},
      {"another layout", at(7, char{4}), "another corenoise (layout 4"},
      {"another header size", at(offsetof(SpillHeader, header_bytes), std::uint32_t{100}),
       "a header of 100"},
      {"capacity 0", at(offsetof(SpillHeader, bin_capacity), std::uint32_t{0}),
       "a capacity of 0 bins"},
      {"capacity past the most", at(offsetof(SpillHeader, bin_capacity), std::uint32_t{0xffffffff}),
       "a capacity of 4294967295 bins"},
      {"capacity beyond the file", at(offsetof(SpillHeader, bin_capacity), std::uint32_t{17}),
       "truncated"},
      {"negative rank", at(offsetof(SpillHeader, rank), std::int32_t{-1}), "rank -1 of a job of 2"},
      {"rank = size", at(offsetof(SpillHeader, rank), std::int32_t{2}), "rank 2 of a job of 2"},
      {"size 0", at(offsetof(SpillHeader, size), std::int32_t{0}), "a job of 0 ranks"},
      {"negative size", at(offsetof(SpillHeader, size), std::int32_t{-5}), "a job of -5 ranks"},
      {"pid 0", at(offsetof(SpillHeader, pid), std::int64_t{0}), "pid 0"},
      {"host unterminated",
       [](const std::string& p) {
         patch_spill(p, offsetof(SpillHeader, host), std::string(64, 'h').data(), 64);
       },
       "the host name is not NUL-terminated"},
      {"family unterminated",
       [](const std::string& p) {
         patch_spill(p, offsetof(SpillHeader, family), std::string(16, 'f').data(), 16);
       },
       "the MPI family is not NUL-terminated"},
      {"program unterminated",
       [](const std::string& p) {
         patch_spill(p, offsetof(SpillHeader, program), std::string(512, 'p').data(), 512);
       },
       "the program is not NUL-terminated"},
      {"escape in the host",
       [](const std::string& p) { patch_spill(p, offsetof(SpillHeader, host), "\x1b[2J", 5); },
       "the host name holds control characters"},
      {"no family", at(offsetof(SpillHeader, family), '\0'), "no MPI family"},
      {"start NaN", at(offsetof(SpillHeader, started_unix_seconds), kNaN),
       "the time it started, nan"},
      {"update negative", at(offsetof(SpillHeader, updated_unix_seconds), -1.0),
       "the time it updated, -1"},
      {"measure NaN", at(offsetof(SpillHeader, measures) + 3 * sizeof(double), kNaN),
       "measure 3 of"},
      {"measure inf", at(offsetof(SpillHeader, measures), kInf), "measure 0 of"},
      {"measure 1e300", at(offsetof(SpillHeader, measures), 1e300), "measure 0 of"},
      {"steps past 2^53", at(counts, (std::uint64_t{1} << 53) + 1), "more than any job makes"},
      {"0 steps per bin", at(counts + 8, std::uint64_t{0}), "0 steps per bin"},
      {"3 steps per bin", at(counts + 8, std::uint64_t{3}), "3 steps per bin"},
      {"more steps per bin than steps", at(counts + 8, std::uint64_t{16}),
       "16 steps per bin for 10 steps"},
      {"more bins than the capacity", at(counts + 16, std::uint64_t{17}),
       "17 bins in use, more than its capacity"},
      {"bins of 2^64 - 1", at(counts + 16, ~std::uint64_t{0}), "more than its capacity"},
      {"more steps than bins", at(counts, std::uint64_t{12}),
       "12 steps do not fit in 10 bins of 1"},
      {"a NaN wait", at(bins + 2 * sizeof(double), kNaN), "bin 2 holds a wait of nan"},
      {"a negative wait", at(bins, -1.0), "bin 0 holds a wait of -1"},
  };
  for (const Case& c : cases) {
    TempDir dir("spill");
    const std::string path = write_spill(dir.path(), {.rank = 1, .size = 2, .steps = 10});
    c.damage(path);
    const std::string error = refusal(path);
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
  }
}

TEST(JobSpillFile, RandomBytesAreRefused) {
  std::mt19937_64 random(7);
  for (const std::size_t size :
       {std::size_t{1}, std::size_t{7}, sizeof(SpillHeader), sizeof(SpillHeader) + 128}) {
    TempDir dir("spill");
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    std::ofstream(dir.file("rank-0.spill"), std::ios::binary) << bytes;
    EXPECT_NE(refusal(dir.file("rank-0.spill")).find("not a spill file"), std::string::npos);
  }
  // The magic and then garbage: refused by a value, whatever it is.
  for (int trial = 0; trial < 200; ++trial) {
    TempDir dir("spill");
    const std::string path = write_spill(dir.path(), {.rank = 0, .size = 1});
    std::string noise(sizeof(SpillHeader) - 8 + 16 * sizeof(double), '\0');
    for (char& c : noise) c = static_cast<char>(random());
    patch_spill(path, 8, noise.data(), noise.size());
    std::string error;
    if (const auto rank = read_spill(path, &error)) {
      EXPECT_EQ(spilled_rank_problem(*rank), "");
    } else {
      EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
    }
  }
}

// Opening a FIFO would wait for a writer forever; a directory or a device
// is no file of a rank.
TEST(JobSpillFile, FifosDirectoriesAndDevicesAreRefusedWithoutWaiting) {
  TempDir dir("spill");
  ASSERT_EQ(::mkfifo(dir.file("rank-0.spill").c_str(), 0600), 0);
  std::filesystem::create_directory(dir.file("rank-1.spill"));
  std::filesystem::create_symlink("/dev/zero", dir.file("rank-2.spill"));
  const auto start = std::chrono::steady_clock::now();
  for (const char* name : {"rank-0.spill", "rank-1.spill", "rank-2.spill"}) {
    EXPECT_NE(refusal(dir.file(name)).find("not a regular file"), std::string::npos) << name;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// States a writer leaves when killed between two of its stores.
TEST(JobSpillFile, WhatAKilledWriterCanLeaveIsAccepted) {
  TempDir dir("spill");
  // Killed before its steps were attached: every count 0.
  {
    const std::string path = write_spill(dir.path(), {.rank = 0, .size = 1, .steps = 0});
    patch_spill_field(path, offsetof(SpillHeader, step_counts) + 8, std::uint64_t{0});
    std::string error;
    EXPECT_TRUE(read_spill(path, &error)) << error;
  }
  // A step counted before its new bin was: 11 steps in 10 bins of 1.
  {
    const std::string path = write_spill(dir.path(), {.rank = 0, .size = 1, .steps = 11});
    patch_spill_field(path, offsetof(SpillHeader, step_counts) + 16, std::uint64_t{10});
    std::string error;
    EXPECT_TRUE(read_spill(path, &error)) << error;
  }
  // The bins merged and the width doubled, the bins in use not yet halved.
  {
    const std::string path = write_spill(dir.path(), {.rank = 0, .size = 1, .steps = 17});
    patch_spill_field(path, offsetof(SpillHeader, step_counts) + 16, std::uint64_t{16});
    std::string error;
    EXPECT_TRUE(read_spill(path, &error)) << error;
  }
}

TEST(JobSpillDir, AGoodJobIsReadWholeInRankOrder) {
  TempDir dir("spill");
  for (int rank : {2, 0, 1}) write_spill(dir.path(), {.rank = rank, .size = 4, .steps = 10 + rank});
  std::ofstream(dir.file("notes.txt")) << "not a spill file, not named like one";
  std::string notes;
  const auto ranks = read_spill_dir(dir.path(), &notes);
  ASSERT_EQ(ranks.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(ranks[rank].header.rank, rank);
  EXPECT_EQ(notes, "");
  const SpillReport report = report_from_spills(ranks);
  EXPECT_EQ(report.records.size(), 3u);
  EXPECT_EQ(report.facts.ranks_total, 4);
  EXPECT_EQ(report.facts.steps, 10);
  EXPECT_NE(report.facts.incomplete_reason.find("no file from ranks 3"), std::string::npos)
      << report.facts.incomplete_reason;
}

// One bad file stops the report, naming it: the others' figures would be
// charged to the wrong ranks without it.
TEST(JobSpillDir, OneBadFileStopsTheReportNamingIt) {
  TempDir dir("spill");
  write_spill(dir.path(), {.rank = 0, .size = 2});
  const std::string bad = write_spill(dir.path(), {.rank = 1, .size = 2});
  testing::resize_spill(bad, 10);
  const std::string error = dir_refusal(dir.path());
  EXPECT_NE(error.find(bad + ": truncated"), std::string::npos) << error;
  EXPECT_NE(error.find("move the files above out of it"), std::string::npos) << error;
}

TEST(JobSpillDir, FilesOfAnotherJobAreRefusedNamingThem) {
  struct Case {
    SpillPlan other;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{.rank = 5, .size = 8}, "a job of 8 ranks, not 2"},
      {{.rank = 1, .size = 2, .family = "openmpi"}, "MPI family openmpi, not mpich"},
      {{.rank = 1, .size = 2, .program = "./other"}, "program './other', not './app'"},
      {{.rank = 1, .size = 2, .started = 1.8e9 - 3600}, "started 3600 s earlier"},
  };
  for (const Case& c : cases) {
    TempDir dir("spill");
    const std::string good = write_spill(dir.path(), {.rank = 0, .size = 2});
    const std::string other = write_spill(dir.path(), c.other);
    const std::string error = dir_refusal(dir.path());
    EXPECT_NE(error.find(other + " is from another job than " + good + " (" + c.expected + ")"),
              std::string::npos)
        << error;
  }
  // Within the tolerance: one job whose ranks' clocks differ a little.
  TempDir dir("spill");
  write_spill(dir.path(), {.rank = 0, .size = 2});
  write_spill(dir.path(), {.rank = 1, .size = 2, .started = 1.8e9 + kSameJobStartSeconds / 2});
  EXPECT_EQ(read_spill_dir(dir.path(), nullptr).size(), 2u);
}

TEST(JobSpillDir, AFileNamedForAnotherRankOrNoRankIsRefused) {
  TempDir dir("spill");
  write_spill(dir.path(), {.rank = 0, .size = 2});
  std::filesystem::rename(dir.file("rank-0.spill"), dir.file("rank-1.spill"));
  write_spill(dir.path(), {.rank = 0, .size = 2});
  std::filesystem::copy_file(dir.file("rank-0.spill"), dir.file("rank-01.spill"));
  const std::string error = dir_refusal(dir.path());
  EXPECT_NE(error.find(dir.file("rank-1.spill") + ": holds rank 0"), std::string::npos) << error;
  EXPECT_NE(
      error.find(dir.file("rank-01.spill") + ": named like a spill file, but '01' is not a rank"),
      std::string::npos)
      << error;
}

TEST(JobSpillDir, AMissingDirectoryIsNamed) {
  const std::string error = dir_refusal("/nonexistent/corenoise-spill");
  EXPECT_NE(error.find("cannot read /nonexistent/corenoise-spill"), std::string::npos) << error;
}

TEST(JobSpillDir, ARankKilledAsItStartedIsNoted) {
  TempDir dir("spill");
  write_spill(dir.path(), {.rank = 0, .size = 2});
  const std::string early = write_spill(dir.path(), {.rank = 1, .size = 2, .steps = 0});
  patch_spill_field(early, offsetof(SpillHeader, updated_unix_seconds), 0.0);
  std::string notes;
  EXPECT_EQ(read_spill_dir(dir.path(), &notes).size(), 2u);
  EXPECT_NE(notes.find(early + ": no sample yet"), std::string::npos) << notes;
}

SpilledRank spilled(int rank, int size, std::uint64_t steps, std::uint64_t per_bin,
                    std::vector<double> bins) {
  SpilledRank r;
  TempDir dir("spill");
  std::string error;
  auto read = read_spill(write_spill(dir.path(), {.rank = rank, .size = size}), &error);
  if (!read) throw std::runtime_error(error);
  r = std::move(*read);
  r.path.clear();
  r.header.step_counts[0] = steps;
  r.header.step_counts[1] = per_bin;
  r.header.step_counts[2] = bins.size();
  r.bins = std::move(bins);
  return r;
}

// Ranks given to report_from_spills directly get the same checks: before,
// a width that was no power of two doubled past 2^64 to 0 and looped
// forever, and 2^34 steps with no bins allocated 128 GiB of zeros.
TEST(JobSpillReport, RanksThatNoWriterLeavesAreRefusedNotReported) {
  const auto refused = [](const std::vector<SpilledRank>& ranks, const char* expected) {
    try {
      report_from_spills(ranks);
      ADD_FAILURE() << "reported; expected " << expected;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused({spilled(0, 2, ~std::uint64_t{0}, std::uint64_t{1} << 63, {1}),
           spilled(1, 2, 4, 0, {1, 1, 1, 1})},
          "more than any job makes");
  refused({spilled(0, 2, 4, 1, {1, 1, 1, 1}), spilled(1, 2, 4, 3, {1, 1})}, "3 steps per bin");
  refused({spilled(0, 1, std::uint64_t{1} << 34, 1, {})}, "steps do not fit in 0 bins");
  refused({spilled(0, 2, 4, 1, {1, 1, 1, 1}), spilled(0, 2, 4, 1, {1, 1, 1, 1})},
          "holds rank 0, as");
  refused({spilled(0, 2, 4, 1, {1, 1, 1, 1}), spilled(5, 8, 4, 1, {1, 1, 1, 1})},
          "a job of 8 ranks, not 2");
}

// A rank killed after counting a step but before counting its bin: the
// report compares the steps every rank holds a bin for. Before, the
// missing bin read as a wait of 0, so that rank seemed to arrive last and
// was charged the others' whole wait at that step.
TEST(JobSpillReport, AStepCountedBeforeItsBinIsNotReadAsAWaitOfZero) {
  const SpillReport report = report_from_spills(
      {spilled(0, 2, 4, 1, {0.1, 0.1, 0.1, 0.1}), spilled(1, 2, 4, 1, {0.2, 0.2, 0.2})});
  EXPECT_EQ(report.facts.steps, 3);
  ASSERT_EQ(report.records.size(), 2u);
  EXPECT_NEAR(report.records[0].measures.wait_caused_seconds, 0.3, 1e-12);
  EXPECT_NEAR(report.records[1].measures.wait_caused_seconds, 0.0, 1e-12);
}

// Bins of 1, 2 and 4 steps are merged to 4 before they are compared.
TEST(JobSpillReport, FinerBinsMergeToTheCoarsestWidth) {
  const SpillReport report =
      report_from_spills({spilled(0, 3, 8, 1, {1, 1, 1, 1, 1, 1, 1, 1}),
                          spilled(1, 3, 8, 2, {1, 1, 1, 1}), spilled(2, 3, 9, 4, {1, 1.5, 0})});
  EXPECT_EQ(report.facts.steps, 8);
  // Per bin of 4 steps rank 0 waited 4, rank 1 2, rank 2 1 and then 1.5.
  ASSERT_EQ(report.facts.lateness.size(), 3u);
  EXPECT_EQ(report.facts.lateness[0], (std::vector<float>{0, 0}));
  EXPECT_EQ(report.facts.lateness[1], (std::vector<float>{2, 2}));
  EXPECT_EQ(report.facts.lateness[2], (std::vector<float>{3, 2.5}));
  EXPECT_DOUBLE_EQ(report.records[2].measures.wait_caused_seconds,
                   (4 + 2 + 1 - 3 * 1) + (4 + 2 + 1.5 - 3 * 1.5));
}

// A job of 2^31 - 1 ranks of which one left a file: the missing ranks are
// listed without a turn per rank, and the report is as small as the file.
TEST(JobSpillReport, AHugeJobWithOneFileListsTheFirstMissingRanks) {
  const auto start = std::chrono::steady_clock::now();
  const SpillReport report = report_from_spills(
      {spilled(7, std::numeric_limits<std::int32_t>::max(), 4, 1, {1, 1, 1, 1})});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(report.facts.incomplete_reason.find("no file from ranks 0, 1, 2, 3, 4, 5, 6, 8,"),
            std::string::npos)
      << report.facts.incomplete_reason;
  EXPECT_NE(report.facts.incomplete_reason.find(" and 2147483626 more"), std::string::npos)
      << report.facts.incomplete_reason;
}

}  // namespace
}  // namespace corenoise
