#include "collector/cli/job_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "collector/job/model/job_options.h"
#include "collector/job/rebuild/spill_report.h"
#include "collector/mpi/mpi_launcher.h"
#include "collector/mpi/mpi_library.h"
#include "collector/report/job_output.h"
#include "collector/report/report_outputs.h"
#include "daemon/control/control_protocol.h"
#include "probe/settings.h"

namespace corenoise {
namespace {

constexpr const char* kUsage = R"(Usage: corenoise job [OPTIONS] -- PROGRAM [ARGS...]
       corenoise job --report DIR [--json FILE] [--html FILE]

Measures an MPI job from inside: why its ranks wait. Start it as every rank
in place of the program, under the launcher and binding the job uses:
  mpirun.openmpi -n 4 --bind-to core corenoise job --json job.json -- python3 app.py
  mpiexec.mpich -n 4 -bind-to core corenoise job -- ./app
  srun --mpi=pmix --cpu-bind=cores corenoise job --html job.html -- ./app
It loads the in-job library of the launcher's MPI family (LD_PRELOAD) and
execs the program, so no extra process sits in the job. The MPICH
family's library binds to whichever MPICH-ABI library the program brings
(Debian's libmpich.so.12, or the libmpi.so.12 of Intel MPI, MVAPICH or
Cray MPICH), loading no MPI of its own; the report names the library it
measured, its file and MPI_Get_library_version. The library
records the blocking MPI calls (collectives, waits, receives) of the
thread that called MPI_Init, and samples /proc, the CPUs and the clock at
a cadence that keeps its cost near 0.05 % of the job.

At MPI_Finalize the ranks' figures are reduced: the wait at each call
site, the ranks whose lateness made the others wait (the waiting they
caused), and each late rank's lost time in seconds by cause:
own-threads, other-processes, interrupts, steal, page-faults,
slower-clock, more-work. The job's warm-up (its first steps, before the
step times settle: a JIT's compile) is attributed apart from its steady
state, and the steps that kept the others waiting longest are listed
with the last rank and its call site. Configuration findings say what
makes identical ranks unequal before any timing: more busy threads than
CPUs, ranks sharing CPUs or bound to a whole NUMA node or package,
unbound ranks, thread-pool sizes left unset, XLA_FLAGS words XLA drops.
Rank 0 prints a summary on stderr with the worst ranks, their host, CPU
and cause, and the fix for each cause and finding; every node's
corenoised (where one runs) receives its CPUs' lost time.
docs/job.md explains the figures and how far to trust them.

A job killed before MPI_Finalize (scancel, a time limit, a launcher
killing every rank when one dies) leaves each rank's figures in a spill
file, kept in FILE.ranks/ beside the --json (else --html, else --live)
file or in --spill DIR; --report DIR builds the report from them
afterwards, with the exchange charges and the phases as the last live
epoch reduced them.

While the job runs, its figures are reduced every --live-interval
seconds without stopping it (on the library's own communicators,
progressed from the ranks' own MPI calls): --live FILE shows the report
so far.

Exit status: the program's own; 1 for bad input or a missing library
(before the program starts), 127 when the program cannot be run. With
--report: 0, or 1 when DIR holds no spill file.

Options:
  --json FILE               write the report as JSON (docs/job.md)
  --html FILE               write the report as a self-contained web page
  --socket PATH             the node's corenoised control socket (default:
                            $CORENOISE_SOCKET, else /run/corenoise/ctl.sock;
                            skipped where absent)
  --no-daemon               neither ask corenoised for verdicts nor send it
                            the job's lost time
  --finalize-timeout S      how long MPI_Finalize waits for every rank's
                            figures before reporting without the missing
                            ones (default: 30; a rank later than that
                            counts as lost)
  --budget PERCENT          share of the job's time the sampling may take,
                            0.0001 to 10 (default: 0.05)
  --spill DIR               where each rank keeps its figures while it runs
                            (default: FILE.ranks beside --json or --html;
                            none without either)
  --no-spill                keep no spill files
  --live FILE               rewrite FILE with the report so far (JSON, the
                            --json schema) at every live epoch, while the
                            job runs (the --html page is rewritten too, and
                            reloads itself while the job runs)
  --live-interval S         seconds between live epochs, 1 to 86400, or 0
                            for none (default: 30); each epoch also keeps
                            the report so far in the spill folder, for
                            --report
  --report DIR              no program: the report of a job that ended
                            before MPI_Finalize, from its spill files
  --full N                  every rank's record in the report up to N ranks
                            (default: 64); above, every rank's figures are
                            judged and counted, and the records kept are
                            the worst ranks' and each node's worst rank's
  --quiet                   no summary on stderr (the files are written)
  --help                    this text
)";

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
  return text;
}

// The files rank 0 will write at the job's end, opened by the writer that
// will write them and removed again (never committed): a bad path fails
// before the job runs instead of after.
void check_writable(const std::map<std::string, std::string>& environment) {
  const auto path = [&](const char* name) -> std::optional<std::string> {
    auto it = environment.find(name);
    if (it == environment.end()) return std::nullopt;
    return it->second;
  };
  ReportOutputs(path("CORENOISE_JOB_JSON"), path("CORENOISE_JOB_HTML"));
  ReportOutputs(path("CORENOISE_JOB_LIVE"), std::nullopt);
}

// `--report DIR`: the report of a job killed before MPI_Finalize.
int report_from_spill_dir(const JobLaunch& launch) {
  std::string problems;
  const auto ranks = read_spill_dir(launch.report_dir, &problems);
  if (!problems.empty()) std::cerr << "corenoise job: " << problems << '\n';
  if (ranks.empty()) {
    throw std::runtime_error("no spill file (rank-N.spill) in " + launch.report_dir);
  }
  // The last live epoch's report where the folder kept one (it has the
  // exchange charges and the phases, which the spill files alone have not).
  std::string why;
  std::optional<SpillReport> live = report_from_live_epoch(launch.report_dir, ranks, &why);
  if (!why.empty()) std::cerr << "corenoise job: " << why << '\n';
  const SpillReport spilled = live ? std::move(*live) : report_from_spills(ranks);
  std::string warnings;
  const JobOptions options = job_options_from(
      [&launch](const char* name) -> const char* {
        auto it = launch.environment.find(name);
        return it == launch.environment.end() ? nullptr : it->second.c_str();
      },
      &warnings);
  write_job_outputs(spilled.summaries.empty()
                        ? build_job_report(spilled.facts, spilled.records)
                        : build_job_report(spilled.facts, spilled.summaries, spilled.records),
                    options);
  return kExitHealthy;
}

// `library` first in the program's LD_PRELOAD, before the caller's. ld.so
// splits LD_PRELOAD at spaces and colons, with no escape, so a library
// whose path holds one (a build or a prefix under "/home/a user/") goes in
// by its file name, found through its folder put first on LD_LIBRARY_PATH,
// which splits at colons and semicolons only.
void add_preload(const std::filesystem::path& library,
                 std::map<std::string, std::string>* environment) {
  const auto caller = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  std::string entry = library.string();
  if (entry.find_first_of(" :") != std::string::npos) {
    const std::string folder = library.parent_path().string();
    if (folder.find_first_of(":;") != std::string::npos) {
      throw std::runtime_error("cannot preload " + entry +
                               ": LD_PRELOAD splits at spaces and colons and LD_LIBRARY_PATH at "
                               "colons and semicolons; install corenoise where its path has no "
                               "colon or semicolon");
    }
    entry = library.filename().string();
    const std::string path = caller("LD_LIBRARY_PATH");
    (*environment)["LD_LIBRARY_PATH"] = folder + (path.empty() ? "" : ":" + path);
  }
  const std::string preload = caller("LD_PRELOAD");
  (*environment)["LD_PRELOAD"] = entry + (preload.empty() ? "" : ":" + preload);
}

}  // namespace

namespace {

// `corenoise job`'s own arguments, and the program's after "--".
void split_at_dashes(const std::vector<std::string>& args, std::vector<std::string>& own,
                     std::vector<std::string>& program) {
  bool in_program = false;
  for (const auto& arg : args) {
    if (in_program) {
      program.push_back(arg);
    } else if (arg == "--") {
      in_program = true;
    } else {
      own.push_back(arg);
    }
  }
}

// One option, into the environment the program gets (or the report's
// folder); a bad value is a UsageError naming the option.
void apply_option(const std::string& name, const std::string& value, JobLaunch& launch) {
  auto& env = launch.environment;
  try {
    if (name == "json") {
      env["CORENOISE_JOB_JSON"] = absolute(value);
    } else if (name == "html") {
      env["CORENOISE_JOB_HTML"] = absolute(value);
    } else if (name == "socket") {
      env["CORENOISE_JOB_SOCKET"] = absolute(value);
    } else if (name == "no-daemon") {
      env["CORENOISE_JOB_SOCKET"] = "";
    } else if (name == "finalize-timeout") {
      env["CORENOISE_JOB_FINALIZE_TIMEOUT"] =
          std::to_string(parse_real_value(value, 0.1, 3600, "seconds"));
    } else if (name == "budget") {
      env["CORENOISE_JOB_BUDGET"] =
          std::to_string(parse_real_value(value, 1e-4, 10, "a percentage") / 100);
    } else if (name == "full") {
      const double ranks = parse_real_value(value, 0, 1e7, "a number of ranks");
      if (ranks != std::floor(ranks))
        throw std::invalid_argument("'" + value + "' is not a whole number of ranks");
      env["CORENOISE_JOB_FULL"] = std::to_string(static_cast<long>(ranks));
    } else if (name == "quiet") {
      env["CORENOISE_JOB_QUIET"] = "1";
    } else if (name == "live") {
      env["CORENOISE_JOB_LIVE"] = absolute(value);
    } else if (name == "live-interval") {
      const double seconds = parse_real_value(value, 0, 86400, "seconds");
      if (seconds > 0 && seconds < 1)
        throw std::invalid_argument("'" + value + "' is under a second: 1 to 86400, or 0");
      env["CORENOISE_JOB_LIVE_INTERVAL"] = std::to_string(seconds);
    } else if (name == "spill") {
      env["CORENOISE_JOB_SPILL"] = absolute(value);
    } else if (name == "report") {
      launch.report_dir = absolute(value);
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError("--" + name + ": " + e.what());
  }
}

// The spill folder beside the first output, unless --spill or --no-spill
// said otherwise.
void default_spill(const ParsedArgs& parsed, std::map<std::string, std::string>& env) {
  if (parsed.has("spill") || parsed.has("no-spill")) return;
  for (const char* output : {"CORENOISE_JOB_JSON", "CORENOISE_JOB_HTML", "CORENOISE_JOB_LIVE"}) {
    if (auto it = env.find(output); it != env.end()) {
      env["CORENOISE_JOB_SPILL"] = it->second + ".ranks";
      return;
    }
  }
}

}  // namespace

JobLaunch parse_job_options(const std::vector<std::string>& args) {
  std::vector<std::string> own, program;
  split_at_dashes(args, own, program);
  const ParsedArgs parsed = parse_args(own,
                                       {"json", "html", "socket", "finalize-timeout", "budget",
                                        "spill", "report", "full", "live", "live-interval"},
                                       {"no-daemon", "no-spill", "quiet", "help"});
  if (!parsed.positional.empty()) {
    throw UsageError("'" + parsed.positional.front() +
                     "' before '--': the program comes after '--'");
  }
  JobLaunch launch;
  launch.program = program;
  const char* socket = std::getenv("CORENOISE_SOCKET");
  launch.environment["CORENOISE_JOB_SOCKET"] =
      socket != nullptr && *socket != '\0' ? socket : kDefaultControlSocket;
  for (const auto& [name, value] : parsed.options) apply_option(name, value, launch);
  if (parsed.has("no-daemon") && parsed.has("socket"))
    throw UsageError("--socket and --no-daemon contradict");
  if (parsed.has("no-spill") && parsed.has("spill"))
    throw UsageError("--spill and --no-spill contradict");
  if (!launch.report_dir.empty()) {
    if (!program.empty())
      throw UsageError("--report DIR runs no program: leave out '-- " + program.front() + "'");
    return launch;
  }
  if (program.empty()) throw UsageError("no program: corenoise job [OPTIONS] -- PROGRAM [ARGS...]");
  default_spill(parsed, launch.environment);
  launch.environment["CORENOISE_JOB_PROGRAM"] = joined(program);
  return launch;
}

int run_job_command(const std::vector<std::string>& args) {
  // --help is corenoise's only before "--": `corenoise job -- ./app --help`
  // runs the app's.
  const auto end = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> own(args.begin(), end);
  return run_local_command(
      "job", own, [](std::ostream& out) { out << kUsage; },
      [&]() -> int {
        JobLaunch launch = parse_job_options(args);
        if (!launch.report_dir.empty()) return report_from_spill_dir(launch);
        Launch mpi;
        try {
          mpi = detect_launch();
        } catch (const std::invalid_argument& e) {
          throw std::runtime_error(e.what());
        }
        if (!mpi.family) {
          throw std::runtime_error(
              "no MPI launcher started this process (none of PMI_FD, PMI_PORT, "
              "OMPI_COMM_WORLD_SIZE, "
              "PMIX_RANK, PMI_RANK is set): start it as every rank with mpiexec.mpich, "
              "mpirun.openmpi "
              "or srun --mpi=..., or set CORENOISE_MPI=mpich|openmpi for a program run alone");
        }
        const std::string family(family_name(*mpi.family));
        const std::string file = "libcorenoise-job-" + family + ".so";
        std::string tried;
        const auto library = find_family_library(file, &tried);
        if (!library) {
          throw std::runtime_error("this corenoise was built without " + family_title(*mpi.family) +
                                   " (no " + file + " in " + tried + "); rebuild it with " +
                                   family + " in CORENOISE_MPI_FAMILIES (docs/operations.md)");
        }
        // Only rank 0 writes; it checks before the job starts.
        if (mpi.rank <= 0) check_writable(launch.environment);
        launch.environment["CORENOISE_JOB_FAMILY"] = family;
        add_preload(*library, &launch.environment);
        for (const auto& [name, value] : launch.environment)
          ::setenv(name.c_str(), value.c_str(), 1);
        std::vector<char*> argv;
        for (auto& word : launch.program) argv.push_back(word.data());
        argv.push_back(nullptr);
        ::execvp(argv[0], argv.data());
        std::cerr << "corenoise job: cannot run '" << launch.program.front()
                  << "': " << std::strerror(errno) << '\n';
        return 127;
      });
}

}  // namespace corenoise
