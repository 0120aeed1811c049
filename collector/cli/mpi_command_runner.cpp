#include "collector/cli/mpi_command_runner.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "collector/mpi/mpi_library.h"

namespace corenoise {

// MPI_Finalize takes milliseconds; past this, it hangs (MpiEnvironment::finalize).
constexpr double kFinalizeSeconds = 5;

int run_mpi_command(const MpiCommand& command, const std::vector<std::string>& args) {
  const std::string prefix = "corenoise " + command.name + ": ";
  // --help needs no MPI: only the launcher's rank 0 (or a lone process)
  // prints it, whatever CORENOISE_MPI says.
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    if (announced_rank() <= 0) command.print_usage(std::cout);
    return kExitHealthy;
  }
  Launch launch;
  try {
    launch = detect_launch();
  } catch (const std::invalid_argument& e) {
    std::cerr << prefix + e.what() + "\n";
    return kExitFailure;
  }
  std::unique_ptr<MpiEnvironment> env;
  try {
    env = open_mpi_environment(launch);
  } catch (const MpiLaunchMismatch& e) {
    // Every rank fails alike: one line for the job, not 3,840.
    if (launch.rank <= 0) std::cerr << prefix + e.what() + "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    // A node's own problem (a library missing there): one line per node.
    if (launch.local_rank <= 0) std::cerr << prefix + e.what() + "\n";
    return kExitFailure;
  }
  const bool speaker = env->world_rank() == 0;
  double watchdog_seconds = 0;
  try {
    watchdog_seconds = command.parse(args);
  } catch (const UsageError& e) {
    if (speaker) {
      std::cerr << prefix + e.what() + " (see corenoise " + command.name + " --help)\n";
    }
    return kExitFailure;
  }
  env->start_watchdog(watchdog_seconds, "corenoise " + command.name);
  env->barrier_world();
  int code = kExitHealthy;  // ranks that are not leaders: the leaders report
  try {
    if (env->is_leader()) {
      code = command.lead(*env);
    } else if (command.follow) {
      command.follow(*env);
    }
  } catch (const std::exception& e) {
    // An MPI failure here leaves the job inconsistent; the watchdog ends it.
    std::cerr << prefix + e.what() + "\n";
    code = kExitFailure;
  }
  env->barrier_world();
  env->finalize(kFinalizeSeconds, code);
  return code;
}

int agree_on_exit_code(MpiEnvironment& env, const std::string& prefix,
                       const std::function<int()>& on_root) {
  std::vector<std::byte> code(1, std::byte{kExitFailure});
  if (env.node_index() == 0) {
    try {
      code[0] = static_cast<std::byte>(on_root());
    } catch (const std::exception& e) {
      std::cerr << prefix + e.what() + "\n";  // one write: ranks share stderr
    }
  }
  env.broadcast(code);
  return code.empty() ? kExitFailure : static_cast<int>(code[0]);
}

}  // namespace corenoise
