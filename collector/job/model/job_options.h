// The in-job library's settings, passed by `corenoise job` to the program
// it execs through the environment (the only channel an LD_PRELOAD library
// has): CORENOISE_JOB_JSON, CORENOISE_JOB_HTML, CORENOISE_JOB_SOCKET,
// CORENOISE_JOB_BUDGET, CORENOISE_JOB_FINALIZE_TIMEOUT, CORENOISE_JOB_QUIET,
// CORENOISE_JOB_PROGRAM, CORENOISE_JOB_SPILL, CORENOISE_JOB_FULL, CORENOISE_JOB_LIVE,
// CORENOISE_JOB_LIVE_INTERVAL. docs/job.md lists them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace corenoise {

struct JobOptions {
  std::string json_path;    // empty: no JSON file
  std::string html_path;    // empty: no page
  std::string socket_path;  // the node's corenoised; empty: none
  std::string spill_dir;    // per-rank records survive a kill here; empty: none
  std::string live_path;    // the live report, rewritten each epoch; empty: none
  std::string program;      // the command line, for the report
  std::string family;       // "mpich", "openmpi"
  // Share of the job's time the sampling may take (0.0005 = 0.05 %): the
  // cadence follows from each sample's measured cost.
  double budget = 0.0005;
  double min_interval_seconds = 0.01;
  double max_interval_seconds = 2.0;
  // How long MPI_Finalize waits for every rank before reporting without
  // the missing ones.
  double finalize_timeout_seconds = 30;
  // The live reduction's cadence (live_reduction.h): an epoch starts this
  // long after the last one ended. 0: no live reduction.
  double live_interval_seconds = 30;
  // Every rank's record in the report up to this many ranks; above, the
  // records of the ranks it names (job_selection.h) and every rank's
  // summary (rank_summary.h).
  std::size_t full_ranks = 64;
  bool banner = true;
  std::string proc_root = "/proc";
  // Where the kernel's CPU topology is read, for the domain-binding
  // finding (rank_config.h).
  std::string sys_root = "/sys";
};

using JobEnvironment = std::function<const char*(const char*)>;

// The options in `lookup`'s variables; a malformed number keeps its default
// and is named in `*warnings` (the library must not stop a job for it).
JobOptions job_options_from(const JobEnvironment& lookup, std::string* warnings);

}  // namespace corenoise
