// Rank 0 of a `corenoise job` of P ranks at MPI_Finalize, run by the real
// code on synthetic ranks: what it holds and how long its own work takes
// at 3,840, 32,768 and 100,000 ranks, where no machine here can run them
// (docs/scaling.md, "`corenoise job`: what rank 0 holds"). Each P runs in a
// child process of its own, which counts its peak resident memory from its
// start (/proc/self/status VmHWM less VmRSS then).
//
// What runs is rank 0's side of collector/job/rank/record_collection.cpp
// and job_reduction.cpp, less MPI: the gathered summaries (the
// MPI_Igather's receive buffer, P × RankSummary), judge_ranks and
// ranks_in_full, then each asked rank's record and each node's digest
// parsed off its wire text as it arrives (record_from_wire,
// digest_from_wire), then
// build_job_report, and the JSON and the page written by
// write_job_outputs, as `corenoise job --json --html` writes them. The records are made one at a
// time, as MPI hands rank 0 one at a time (FinalizeBuffers::incoming); the
// time to make them is not rank 0's and is left out.
//
// The job: 120 ranks a node (the story's 3,840 ranks on 32 nodes), 1,000
// lateness columns, a rank in 1,000 late (3 times the work), every rank
// with the same configuration mistake (one finding over every rank) and 6
// call sites, 5 threads. A benchmark: it prints figures and fails on none.
//
//   build/tests/bench/job_reduction_sim [RANKS ...]   (default 3840 32768 100000)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "collector/job/model/job_options.h"
#include "collector/job/model/job_report.h"
#include "collector/job/model/job_selection.h"
#include "collector/job/model/live_window.h"
#include "collector/job/model/node_digest.h"
#include "collector/job/model/rank_summary.h"
#include "collector/report/job_output.h"

namespace corenoise {
namespace {

constexpr int kRanksPerNode = 120;
constexpr std::size_t kColumns = 1000;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A field of /proc/self/status, in MB.
double status_mb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::atof(line.c_str() + std::strlen(field)) / 1024;
  }
  return 0;
}

bool is_late(int rank) { return rank % 1000 == 999; }

// Rank `rank`'s measures: a clean rank's with the spread of real ranks
// (a few ms over 60 s), or 3 times the work.
RankMeasures measures_of(int rank, std::mt19937_64& random) {
  std::normal_distribution<double> spread(0, 0.004);
  RankMeasures m;
  m.elapsed_seconds = 600;
  m.compute_seconds = 400 + spread(random);
  m.compute_cpu_seconds = m.compute_seconds - 0.2 - std::abs(spread(random));
  m.wait_seconds = 200;
  m.wait_cpu_seconds = 200;
  m.calls = 20000;
  m.steps = 10000;
  m.samples = 3000;
  m.own_threads_seconds = 0.1 + std::abs(spread(random));
  m.clock_hz = 2.4e9;
  m.minor_faults = 10000;
  m.fault_seconds = 0.007;
  m.wait_caused_seconds = std::abs(spread(random)) * 10;
  if (is_late(rank)) {
    m.compute_seconds += 60;
    m.compute_cpu_seconds += 60;
    m.wait_seconds -= 60;
    m.wait_caused_seconds = 60.0 * kRanksPerNode;
  }
  m.off_cpu_seconds = off_cpu(m);
  return m;
}

RankSummary summary_of_rank(int rank, std::mt19937_64& random) {
  RankSummary s;
  s.measures = measures_of(rank, random);
  s.warmup = s.measures;
  for (std::size_t i = 0; i < kRankMeasureCount; ++i) as_array(s.warmup)[i] /= 100;
  s.warmup.steps = 64;
  s.warmup.clock_hz = s.measures.clock_hz;
  s.has_warmup = 1;
  s.rank = rank;
  s.node = rank - rank % kRanksPerNode;
  return s;
}

std::string host_of(int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "cn%05d", rank / kRanksPerNode);
  return name;
}

// Rank `rank`'s whole record, as own_record() makes it.
RankRecord record_of(const RankSummary& s) {
  RankRecord r;
  r.rank = s.number();
  r.host = host_of(r.rank);
  r.cpus = {static_cast<unsigned>(r.rank % kRanksPerNode)};
  r.pid = 100000 + r.rank;
  r.measures = s.measures;
  r.warmup = s.warmup;
  for (const char* name : {"python3", "jax-worker", "openblas-1", "xla-cpu-2", "mpi-progress"})
    r.threads.push_back({name, 0.02});
  for (int i = 0; i < 6; ++i) {
    r.sites.push_back({"MPI_Allreduce",
                       "train.py:" + std::to_string(100 + i) + " in step; train.py:42 in main",
                       1000, 20, 0.7});
  }
  r.config.busy_threads_peak = 3;
  r.config.node_cpus = 128;
  r.config.unset_pools = {{"OMP_NUM_THREADS", "libgomp.so.1"}};
  r.config.xla_dropped = "intra_op_parallelism_threads=1";
  return r;
}

std::vector<float> lateness_row(int rank) {
  std::vector<float> row(kColumns);
  for (std::size_t c = 0; c < kColumns; ++c)
    row[c] = static_cast<float>(is_late(rank) ? 0.06 : 0.0001 * ((rank + c) % 7));
  return row;
}

// The wire text rank `rank` sends rank 0 when asked (record_collection.cpp's
// wire_of): its record and lateness row.
std::string record_text(const RankSummary& s) {
  nlohmann::json wire = to_wire(record_of(s));
  wire["lateness"] = lateness_row(s.number());
  return wire.dump();
}

// The digest a node's first rank sends rank 0, made from its node's
// records as that rank makes it; `ms`, the time it took there.
std::string digest_text(int first, int ranks, double* ms) {
  std::mt19937_64 random(static_cast<std::uint64_t>(first));
  std::vector<RankRecord> node;
  for (int r = first; r < std::min(ranks, first + kRanksPerNode); ++r)
    node.push_back(record_of(summary_of_rank(r, random)));
  node.front().node_culprits = {{3, 4242, "backup", 0.5}};
  const auto start = Clock::now();
  const std::string text = to_wire(node_digest(node.front(), node, lateness_row(first + 1))).dump();
  *ms = seconds_since(start) * 1000;
  return text;
}

struct Row {
  int ranks = 0, nodes = 0;
  std::size_t asked = 0;
  double record_bytes = 0, node_first_bytes = 0;
  double node_first_ms = 0;
  double judge_s = 0, parse_s = 0, build_s = 0, write_s = 0;
  double window_s = 0, window_mb = 0;  // a live epoch's window (live_window.h)
  std::size_t window_named = 0;
  double added_mb = 0;
  double json_mb = 0, page_mb = 0;
};

// A live epoch's own window, on rank 0 (job_reduction.cpp's
// judge_gathered): the previous epoch's measures kept for every rank (here
// each figure at 90 %, as 30 s into a 300 s job), the windows judged and
// their late ranks named. Its time, and what the kept measures add to
// rank 0 (they stay from the first epoch to MPI_Finalize: in "added").
void simulate_window(const std::vector<RankSummary>& all, Row& row) {
  const double before = status_mb("VmRSS:");
  LiveBaseline baseline;
  baseline.ranks.resize(all.size());
  for (const RankSummary& s : all) {
    RankMeasures& kept = baseline.ranks[static_cast<std::size_t>(s.number())];
    for (std::size_t i = 0; i < kRankMeasureCount; ++i)
      as_array(kept)[i] = 0.9 * as_array(s.measures)[i];
  }
  baseline.epochs = 1;
  const auto start = Clock::now();
  row.window_named = window_ranks(all, baseline, judge_windows(all, baseline)).size();
  row.window_s = seconds_since(start);
  row.window_mb = status_mb("VmRSS:") - before;
}

Row simulate(int ranks) {
  Row row;
  row.ranks = ranks;
  row.nodes = (ranks + kRanksPerNode - 1) / kRanksPerNode;
  const double rss_at_start = status_mb("VmRSS:");
  std::mt19937_64 random(7);
  // The gather's receive buffer.
  std::vector<RankSummary> all;
  all.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all.push_back(summary_of_rank(r, random));

  auto start = Clock::now();
  const std::vector<int> asked = ranks_in_full(all, judge_ranks(all), 64);
  row.judge_s = seconds_since(start);
  row.asked = asked.size();
  simulate_window(all, row);

  JobFacts facts;
  facts.version = "sim";
  facts.program = "python3 train.py";
  facts.ranks_total = ranks;
  facts.steps = 10000;
  facts.steps_per_column = 10;
  facts.warmup_steps = 64;
  std::vector<RankRecord> records;
  std::size_t bytes = 0, digest_bytes = 0;
  for (int rank : asked) {
    const std::string text = record_text(all[static_cast<std::size_t>(rank)]);
    bytes += text.size();
    start = Clock::now();
    const nlohmann::json wire = nlohmann::json::parse(text);
    records.push_back(record_from_wire(wire));
    facts.lateness.push_back(wire.at("lateness").get<std::vector<float>>());
    row.parse_s += seconds_since(start);
  }
  for (int first = 0; first < ranks; first += kRanksPerNode) {
    const std::string text = digest_text(first, ranks, &row.node_first_ms);
    digest_bytes += text.size();
    start = Clock::now();
    facts.node_digests[first] = digest_from_wire(nlohmann::json::parse(text));
    row.parse_s += seconds_since(start);
  }
  row.record_bytes =
      static_cast<double>(bytes) / static_cast<double>(std::max<std::size_t>(1, asked.size()));
  row.node_first_bytes = static_cast<double>(digest_bytes) / row.nodes;

  start = Clock::now();
  JobReport report = build_job_report(std::move(facts), all, records);
  row.build_s = seconds_since(start);
  // What rank 0 no longer needs once the report is built (finish_job).
  std::vector<RankSummary>().swap(all);
  std::vector<RankRecord>().swap(records);

  // The outputs as `corenoise job --json --html` writes them.
  char dir[] = "/tmp/job-reduction-sim-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return row;
  const std::string json_path = std::string(dir) + "/job.json";
  const std::string html_path = std::string(dir) + "/job.html";
  JobOptions options;
  options.json_path = json_path;
  options.html_path = html_path;
  options.banner = false;
  start = Clock::now();
  write_job_outputs(report, options);
  row.write_s = seconds_since(start);
  row.json_mb = static_cast<double>(std::filesystem::file_size(json_path)) / 1e6;
  row.page_mb = static_cast<double>(std::filesystem::file_size(html_path)) / 1e6;
  row.added_mb = status_mb("VmHWM:") - rss_at_start;
  if (const char* keep = std::getenv("JOB_SIM_PAGES")) {
    std::filesystem::copy_file(html_path,
                               std::string(keep) + "/job-" + std::to_string(ranks) + ".html",
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::remove_all(dir);
  return row;
}

}  // namespace
}  // namespace corenoise

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {3840, 32768, 100000};
  std::printf("%7s %5s %5s %9s %10s %9s %8s %8s %8s %8s %8s %9s %8s %8s\n", "ranks", "nodes",
              "asked", "summary_B", "record_B", "digest_B", "judge_s", "parse_s", "build_s",
              "write_s", "rank0_s", "added_MB", "json_MB", "page_MB");
  for (int ranks : sizes) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return 1;
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(pipe_fds[0]);
      const corenoise::Row row = corenoise::simulate(ranks);
      ::write(pipe_fds[1], &row, sizeof(row));
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    corenoise::Row row;
    const bool read_whole = ::read(pipe_fds[0], &row, sizeof(row)) == sizeof(row);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!read_whole) {
      std::printf("%7d: the simulation failed (status %d)\n", ranks, status);
      continue;
    }
    const double rank0 = row.judge_s + row.parse_s + row.build_s + row.write_s;
    std::printf("%7d %5d %5zu %9zu %10.0f %9.0f %8.3f %8.3f %8.3f %8.3f %8.3f %9.1f %8.1f %8.1f\n",
                row.ranks, row.nodes, row.asked, sizeof(corenoise::RankSummary), row.record_bytes,
                row.node_first_bytes, row.judge_s, row.parse_s, row.build_s, row.write_s, rank0,
                row.added_mb, row.json_mb, row.page_mb);
    std::printf("        node's first rank: its digest of %d records in %.1f ms\n",
                corenoise::kRanksPerNode, row.node_first_ms);
    std::printf(
        "        a live epoch's window: judged in %.3f s, %zu ranks named; the measures kept for "
        "it %.1f MB\n",
        row.window_s, row.window_named, row.window_mb);
  }
  return 0;
}
