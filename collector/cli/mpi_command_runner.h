// The runner of corenoise's MPI commands (sweep, collect): what each does
// around its leaders' work. Answer --help (without MPI), open the MPI family
// that launched the process (collector/mpi/mpi_library.h), parse the options
// (every rank parses the same arguments and reaches the same answer, so a
// bad option ends every rank at once and only rank 0 says so), arm the
// watchdog, run the leaders, and meet at the end; and the two agreements
// the leaders need on the way (a failure, the exit code).
//
// Not pure: it loads MPI and writes to stdout and stderr. Threading: the
// MpiEnvironment's, the process's main thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collector/mpi/mpi_environment.h"

namespace corenoise {

struct MpiCommand {
  std::string name;  // "sweep", for messages
  std::function<void(std::ostream&)> print_usage;
  // Parses and keeps the options; throws UsageError. Returns the watchdog's
  // deadline in seconds (0: none).
  std::function<double(const std::vector<std::string>&)> parse;
  // One leader's work; the same exit code on every leader.
  std::function<int(MpiEnvironment&)> lead;
  // The other ranks' part in it, if any (they return 0: the leaders report).
  std::function<void(MpiEnvironment&)> follow = {};
};

int run_mpi_command(const MpiCommand& command, const std::vector<std::string>& args);

// Leader 0 runs `on_root` (a report's outputs and its exit code; an
// exception is a failure, reported with `prefix`), and every leader returns
// that code. Leaders only.
int agree_on_exit_code(MpiEnvironment& env, const std::string& prefix,
                       const std::function<int()>& on_root);

}  // namespace corenoise
