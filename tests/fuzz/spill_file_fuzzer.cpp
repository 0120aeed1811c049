// `corenoise job --report DIR` on arbitrary files: the input is cut before
// every later "cnjob" magic into at most four files, rank-0.spill,
// rank-1.spill, ... of a fresh directory (a seed is one or more spill files
// end to end), which go through read_spill one by one, then read_spill_dir,
// report_from_spills, job_report and job_banner, as the command does.
// Invariants: an accepted file holds what spilled_rank_problem allows (bins
// in use <= capacity, rank < size, ...); the directory is read whole or
// refused naming a file of it; a report has no more ranks than the job, as
// many lateness rows as ranks and at most kMaxLatenessColumns columns, and
// finite figures.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/model/step_math.h"
#include "collector/job/rebuild/spill_reader.h"
#include "collector/job/rebuild/spill_report.h"
#include "collector/report/job_banner.h"
#include "collector/report/job_report_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr std::size_t kMaxFiles = 4;

// One directory per process, DIR/corenoise-spill-fuzz.PID, emptied before
// each input (a directory made and removed per input made the target three
// times slower). libFuzzer leaves by _Exit after a replay or a finding, so
// at start the directories of processes gone are removed too.
const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path temp = std::filesystem::temp_directory_path();
    const std::string prefix = "corenoise-spill-fuzz.";
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(temp, ignored)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        std::filesystem::remove_all(entry.path(), ignored);
      }
    }
    const std::filesystem::path mine = temp / (prefix + std::to_string(::getpid()));
    std::filesystem::remove_all(mine, ignored);
    std::filesystem::create_directory(mine);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(work_dir(), ignored);
    });
    return mine;
  }();
  return dir;
}

std::vector<std::string_view> split_files(std::string_view input) {
  static constexpr std::string_view kMagic("cnjob\0\0", 7);
  std::vector<std::string_view> files;
  std::size_t start = 0;
  while (files.size() + 1 < kMaxFiles) {
    const std::size_t next = input.find(kMagic, start + 1);
    if (next == std::string_view::npos) break;
    files.push_back(input.substr(start, next - start));
    start = next;
  }
  files.push_back(input.substr(start));
  return files;
}

void check_accepted(const corenoise::SpilledRank& r, std::size_t file_bytes) {
  const corenoise::SpillHeader& h = r.header;
  FUZZ_CHECK(corenoise::spilled_rank_problem(r).empty());
  FUZZ_CHECK(h.bin_capacity >= 1 && h.bin_capacity <= corenoise::kMaxStepBins);
  FUZZ_CHECK(file_bytes == sizeof(corenoise::SpillHeader) + h.bin_capacity * sizeof(double));
  FUZZ_CHECK(r.bins.size() == h.step_counts[2] && r.bins.size() <= h.bin_capacity);
  FUZZ_CHECK(h.rank >= 0 && h.rank < h.size);
  FUZZ_CHECK(std::memchr(h.host, '\0', sizeof(h.host)) &&
             std::memchr(h.family, '\0', sizeof(h.family)) &&
             std::memchr(h.program, '\0', sizeof(h.program)));
  for (double w : r.bins) FUZZ_CHECK(std::isfinite(w) && w >= 0);
  FUZZ_CHECK(r.cpus.size() <= 1024);
  for (std::size_t i = 0; i < r.cpus.size(); ++i) {
    FUZZ_CHECK(r.cpus[i] < 1024 && (i == 0 || r.cpus[i - 1] < r.cpus[i]));
  }
}

void check_report(const corenoise::SpillReport& report, std::size_t ranks) {
  FUZZ_CHECK(report.records.size() == ranks);
  FUZZ_CHECK(static_cast<long>(ranks) <= report.facts.ranks_total);
  FUZZ_CHECK(report.facts.steps >= 0 && report.facts.steps_per_column >= 1);
  FUZZ_CHECK(report.facts.lateness.size() == ranks);
  for (const auto& row : report.facts.lateness) {
    FUZZ_CHECK(row.size() <= corenoise::kMaxLatenessColumns &&
               row.size() == report.facts.lateness[0].size());
  }
  for (const auto& record : report.records) {
    FUZZ_CHECK(std::isfinite(record.measures.wait_caused_seconds));
  }

  const corenoise::JobReport job = corenoise::build_job_report(report.facts, report.records);
  FUZZ_CHECK(static_cast<long>(job.ranks_reported) <= job.facts.ranks_total);
  FUZZ_CHECK(job.ranks.size() == ranks);
  (void)corenoise::to_json(job).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)corenoise::job_banner(job);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path& dir = work_dir();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove(entry.path());
  }
  const auto files = split_files(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<corenoise::SpilledRank> each;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string path = (dir / ("rank-" + std::to_string(i) + ".spill")).string();
    std::ofstream(path, std::ios::binary)
        .write(files[i].data(), static_cast<std::streamsize>(files[i].size()));
    std::string error;
    if (auto rank = corenoise::read_spill(path, &error)) {
      FUZZ_CHECK(error.empty());
      check_accepted(*rank, files[i].size());
      each.push_back(std::move(*rank));
    } else {
      FUZZ_CHECK(error.rfind(path + ": ", 0) == 0);
    }
  }

  // The files accepted one by one, without the directory's checks: a set
  // of another job's files is refused, never reported.
  try {
    check_report(corenoise::report_from_spills(each), each.size());
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(!corenoise::spill_job_problems(each).empty());
  }

  // What read_spill_dir must accept: every file, each named for its rank,
  // all of one job.
  bool usable = each.size() == files.size() && corenoise::spill_job_problems(each).empty();
  for (std::size_t i = 0; usable && i < each.size(); ++i) {
    usable = each[i].header.rank == static_cast<int>(i);
  }
  try {
    std::string notes;
    const auto ranks = corenoise::read_spill_dir(dir.string(), &notes);
    FUZZ_CHECK(usable && ranks.size() == files.size());
    FUZZ_CHECK(corenoise::spill_job_problems(ranks).empty());
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      FUZZ_CHECK(ranks[i].header.size == ranks[0].header.size &&
                 (i == 0 || ranks[i - 1].header.rank < ranks[i].header.rank));
    }
    check_report(corenoise::report_from_spills(ranks), ranks.size());
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(!usable);
    FUZZ_CHECK(std::string_view(e.what()).find(dir.string() + "/rank-") != std::string_view::npos);
  }
  return 0;
}
