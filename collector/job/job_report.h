// The job's report, built on rank 0 at MPI_Finalize from every rank's
// record: the JSON of docs/job.md (schema "corenoise-job/1"), which the
// --html page renders, and the banner printed on rank 0's stderr. Pure: no
// MPI, no I/O, so tests build reports from records of their own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collector/job/attribution.h"
#include "collector/job/rank_measures.h"

namespace corenoise {

// What one rank sends rank 0 (job_reduction.cpp), as JSON on the wire:
// rank, host, cpus, pid, measures, threads, sites, and from one rank per
// node culprits and daemon.
struct RankRecord {
  int rank = 0;
  std::string host;
  std::vector<unsigned> cpus;
  long pid = 0;
  RankMeasures measures;
  struct Thread {
    std::string name;
    double seconds = 0;
  };
  std::vector<Thread> threads;  // its other threads, busiest on its CPUs first
  struct Site {
    std::string call, site;
    double calls = 0, wait_seconds = 0, wait_max_seconds = 0;
  };
  std::vector<Site> sites;
  // From the node's reporting rank: other processes per CPU, and the
  // node's corenoised verdicts per CPU (null where none answered).
  struct Culprit {
    int cpu = -1;
    long pid = 0;
    std::string command;
    double seconds = 0;
  };
  std::vector<Culprit> node_culprits;
  nlohmann::json node_daemon;  // {"<cpu>": {"state":..., "cause":...}, ...} or null
};

nlohmann::json to_wire(const RankRecord& record);
RankRecord record_from_wire(const nlohmann::json& wire);  // throws nlohmann's errors

struct JobFacts {
  std::string version;
  std::string program;
  std::string family;
  double started_unix_seconds = 0;
  int ranks_total = 0;  // the job's size
  long steps = 0;
  // Lateness per rank (rows in record order) per column of
  // steps_per_column steps: seconds after the column's first arrival.
  std::vector<std::vector<float>> lateness;
  long steps_per_column = 1;
  std::string incomplete_reason;  // empty: every rank reported
  std::string clock_source;
};

// Whether `attribution` names a late rank: a cause, and waiting caused of
// at least `threshold` (the report's ranks[].cause, and what the daemon is
// sent).
bool is_late(const RankAttribution& attribution, const RankMeasures& measures, double threshold);

// The report's JSON (docs/job.md).
nlohmann::json job_report(const JobFacts& facts, const std::vector<RankRecord>& records);

// The banner, from the report's JSON: ranks, nodes, steps, time waiting,
// the top causes, the worst ranks with host, CPU and cause in words, and
// the fix that fits each cause.
std::string job_banner(const nlohmann::json& report, int worst_ranks = 5);

}  // namespace corenoise
