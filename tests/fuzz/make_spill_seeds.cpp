// Writes the seed corpus of the spill_file fuzz target with the real
// SpillWriter and StepWaits (interval_recorder.h), as a job's ranks do:
//   make_spill_seeds DIR
// Each seed is one or more rank files end to end (the fuzz target cuts its
// input before each magic). 16 bins per file, not a job's 65,536, so that
// a file is 1 KiB and the steps still merge; the pid, host and times are
// fixed afterwards, so that the seeds are the same on every machine.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "collector/job/rank/interval_recorder.h"
#include "collector/job/rank/spill_writer.h"

namespace {

using corenoise::SpillHeader;

constexpr std::size_t kBins = 16;
constexpr double kStarted = 1.8e9;  // 2027

struct RankPlan {
  int rank;
  int steps;           // steps recorded before the "kill"
  bool attach = true;  // false: killed before its steps were attached
};

// One job's ranks written into `dir`, returned as their bytes end to end.
std::string write_job(const std::filesystem::path& dir, int size, const char* program,
                      double started, const std::vector<RankPlan>& plans) {
  std::string bytes;
  for (const RankPlan& plan : plans) {
    std::string path;
    {
      corenoise::SpillWriter writer(
          dir.string(), plan.rank, size, "mpich", program,
          {static_cast<unsigned>(2 * plan.rank), static_cast<unsigned>(2 * plan.rank + 1)}, started,
          kBins);
      path = writer.path();
      corenoise::StepWaits waits(kBins);
      if (plan.attach) {
        waits.mirror_to(writer.bins(), writer.step_counts());
        for (int step = 0; step < plan.steps; ++step) waits.add(1e-3 * ((step + plan.rank) % 5));
        corenoise::RankMeasures m;
        m.elapsed_seconds = 2.0 + plan.rank;
        m.compute_seconds = 1.5;
        m.compute_cpu_seconds = 1.45;
        m.wait_seconds = 0.5;
        m.wait_cpu_seconds = 0.49;
        m.off_cpu_seconds = corenoise::off_cpu(m);
        m.calls = 2.0 * plan.steps;
        m.steps = plan.steps;
        m.samples = 4;
        m.interrupt_seconds = 0.01 * plan.rank;
        m.minor_faults = 100;
        m.clock_hz = 3e9;
        writer.update(m, started + m.elapsed_seconds);
      }
    }
    // The machine's pid and host name out of the seeds.
    const int fd = ::open(path.c_str(), O_WRONLY);
    const std::int64_t pid = 4242 + plan.rank;
    char host[64] = "node-a";
    if (fd < 0 || ::pwrite(fd, &pid, sizeof(pid), offsetof(SpillHeader, pid)) != sizeof(pid) ||
        ::pwrite(fd, host, sizeof(host), offsetof(SpillHeader, host)) != sizeof(host)) {
      std::perror(path.c_str());
      std::exit(1);
    }
    ::close(fd);
    std::ifstream in(path, std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_spill_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path out(argv[1]);
  const std::filesystem::path scratch = out / ".scratch";
  const auto seed = [&](const char* name, const std::string& bytes) {
    std::ofstream(out / name, std::ios::binary) << bytes;
  };
  seed("one-rank", write_job(scratch, 1, "./app", kStarted, {{0, 10}}));
  // 40 steps in 16 bins: merged twice, 4 steps per bin; rank 1 killed first.
  seed("two-ranks-merged", write_job(scratch, 2, "./app --steps 40", kStarted, {{0, 40}, {1, 37}}));
  // Rank 3 lost; the ranks' bins of 1, 2 and 4 steps merge to 4.
  seed("three-of-four-ranks",
       write_job(scratch, 4, "python3 app.py", kStarted, {{0, 12}, {1, 20}, {2, 33}}));
  seed("killed-as-it-started", write_job(scratch, 1, "./app", kStarted, {{0, 0, false}}));
  // Rank 1 of an earlier job of four left in the directory of a job of two.
  seed("another-job-beside", write_job(scratch, 2, "./app", kStarted, {{0, 8}}) +
                                 write_job(scratch, 4, "./app", kStarted - 3600, {{1, 8}}));
  std::filesystem::remove_all(scratch);
  return 0;
}
