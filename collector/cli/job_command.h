// `corenoise job [OPTIONS] -- PROGRAM ARGS...`: started by the MPI launcher
// as every rank, it finds the launcher's family (collector/mpi/
// mpi_launcher.h), puts that family's in-job library
// (libcorenoise-job-<family>.so, collector/job/) in LD_PRELOAD and execs the
// program, so no extra process sits in the job. The library measures the
// rank from MPI_Init to MPI_Finalize and rank 0 reports (docs/job.md).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace corenoise {

// What `args` ask for: the environment to add and the program to exec.
// Pure but for resolving relative paths against the working directory.
// Throws UsageError naming the option.
struct JobLaunch {
  std::map<std::string, std::string> environment;  // CORENOISE_JOB_* (LD_PRELOAD added at exec)
  std::vector<std::string> program;                // argv of the program
  std::string report_dir;                          // --report DIR: no program
};
JobLaunch parse_job_options(const std::vector<std::string>& args);

// Execs the program; returns only on failure: 1 for bad input or a
// missing library, 127 when the program cannot be run.
int run_job_command(const std::vector<std::string>& args);

}  // namespace corenoise
