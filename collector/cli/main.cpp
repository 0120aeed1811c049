// `corenoise`: a thin entry point dispatching to one file per command
// (rtla's layout).
#include <iostream>
#include <string>
#include <vector>

#include "collector/cli/collect_command.h"
#include "collector/cli/daemon_commands.h"
#include "collector/cli/exit_codes.h"
#include "collector/cli/inject_command.h"
#include "collector/cli/job_command.h"
#include "collector/cli/probe_command.h"
#include "collector/cli/selftest_command.h"
#include "collector/cli/sweep_command.h"

namespace {

constexpr const char* kUsage = R"(Usage: corenoise COMMAND [OPTIONS]

corenoise finds the cores that make parallel jobs wait: fixed-work probes
pinned to each core tell which cores are slower than their peers and why
(a lower clock, time lost to interruptions, or memory contention).

Commands:
  probe       probe every core of this node once and print a verdict per core
  sweep       probe every core of every node at once (under an MPI launcher:
              one rank per node, or one per core with --rank-per-core) and
              rank the worst cores and nodes
  collect     reduce every node's corenoised results across nodes (under an
              MPI launcher, one rank per node; --trigger runs a round
              everywhere first) and publish the cluster reference back to
              each daemon
  job         run an MPI program's ranks (under its launcher: corenoise job
              -- PROGRAM) and report why they waited: the late ranks, their
              CPUs and the cause in seconds (its own threads, other
              processes, interrupts, steal, page faults, clock, more work)
  selftest    inject known noise on one CPU, probe, and check that corenoise
              finds it there and nothing elsewhere (run after installing)
  inject      run known interference on given CPUs for a given time: a
              periodic busy thread, or a memory-bandwidth hog

Commands talking to this node's corenoised (--socket PATH, default
$CORENOISE_SOCKET, else /run/corenoise/ctl.sock):
  status      paused or not, latest rounds, CPUs per state, unhealthy CPUs
  pause       pause the periodic rounds [--seconds N]
  resume      resume the periodic rounds
  run         run a round now or --at a time, and print its summary
  calibrate   measure every core and keep it as the core's own baseline

Run 'corenoise COMMAND --help' for the options of a command.
Options: --help, --version.
Exit status: 0 healthy, 1 error or bad input, 2 unhealthy cores found.
)";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return corenoise::kExitFailure;
  }
  const std::string& command = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return corenoise::kExitHealthy;
  }
  if (command == "--version") {
    std::cout << "corenoise " << CORENOISE_VERSION << '\n';
    return corenoise::kExitHealthy;
  }
  if (command == "probe") return corenoise::run_probe_command(rest);
  if (command == "sweep") return corenoise::run_sweep_command(rest);
  if (command == "collect") return corenoise::run_collect_command(rest);
  if (command == "selftest") return corenoise::run_selftest_command(rest);
  if (command == "inject") return corenoise::run_inject_command(rest);
  if (command == "job") return corenoise::run_job_command(rest);
  if (corenoise::is_daemon_command(command)) return corenoise::run_daemon_command(command, rest);
  std::cerr << "corenoise: unknown command '" << command << "' (see corenoise --help)\n";
  return corenoise::kExitFailure;
}
