#include "collector/cli/sweep_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <thread>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "collector/cli/mpi_command_runner.h"
#include "collector/cluster/cluster_reduction.h"
#include "collector/cluster/cluster_report.h"
#include "collector/cluster/cluster_stats.h"
#include "collector/cluster/sweep_rank_per_core.h"
#include "collector/mpi/mpi_environment.h"
#include "collector/report/cluster_report_json.h"
#include "collector/report/report_outputs.h"
#include "collector/report/sweep_summary.h"
#include "daemon/control/control_client.h"
#include "daemon/control/control_protocol.h"
#include "probe/cpu_list.h"
#include "probe/pinning.h"
#include "probe/report.h"
#include "probe/runner.h"
#include "probe/topology.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

using nlohmann::json;

constexpr const char* kUsage = R"(Usage: mpiexec.mpich -ppn 1 -f HOSTS corenoise sweep [OPTIONS]
       mpirun.openmpi --map-by ppr:1:node --hostfile HOSTS corenoise sweep [OPTIONS]
       srun --ntasks-per-node=1 --mpi=pmi2|pmix corenoise sweep [OPTIONS]
       mpiexec.mpich -bind-to core corenoise sweep --rank-per-core [OPTIONS]

Probes every core of every node of the allocation at once: all nodes start
together, run an isolated round (one core at a time) and then a concurrent
round (all cores at once), and the results are reduced across nodes. Prints
the cluster's quantiles, the worst cores with their node, CPU, state and
cause, the worst nodes, the barrier wait a bulk-synchronous job would see
(docs/scaling.md), and the Slurm drain commands for the nodes to take out
(printed, never run). A corenoised running on a node is paused for the
duration and resumed afterwards.

Layout: by default one rank per node probes all of the node's cores (run
with -ppn 1; further ranks only wait). With --rank-per-core every rank probes
the core it is bound to (unbound, the core of its node-local rank), as an
application launched with -bind-to core runs: the MPI library's threads and
each rank's memory placement are then where the job's would be.

MPI: each rank loads the MPI family whose launcher started it (MPICH under
mpiexec.mpich and srun --mpi=pmi2, Open MPI under mpirun.openmpi and srun
--mpi=pmix; CORENOISE_MPI=mpich|openmpi overrides), and stops with an error
if its library sees another job size than the launcher announced. Without a
launcher it runs as a singleton: one node.

Exit status: 0 all healthy, 1 error or bad input, 2 unhealthy cores or
outlier nodes.

Sweep options:
  --cpus LIST               CPUs to probe on every node (default: every usable CPU)
  --json FILE               write the cluster report as JSON to FILE; '-' writes
                            it to stdout and the summary to stderr (schema:
                            docs/sweep.md)
  --html FILE               write the report as one self-contained HTML page
                            (heatmap of nodes x cores with --full; docs/report.md)
  --rank-per-core           every rank probes its own core (see Layout)
  --full                    also gather every core's state, slowdowns and cause
                            to rank 0 (for the heatmap and the JSON `cells`);
                            this is the only part proportional to all cores
  --top N                   worst cores to print, 1 to 64 (default: 10); the
                            JSON always holds all 64
  --ranks N                 job size the barrier-wait prediction extrapolates
                            to (default: the number of cores probed)
  --timeout SECONDS         abort the whole job if the sweep has not finished
                            by then; 0 disables (default: 600)
  --socket PATH             corenoised's control socket to pause (default:
                            $CORENOISE_SOCKET, else /run/corenoise/ctl.sock)
  --verbose                 per node: bytes sent in collectives, reduction time
  --quiet                   print only the summary line (and errors)
  --help                    this text

Probe settings (as for `corenoise probe`, but --mode defaults to both):
)";

// Time between leader 0 choosing the start instant and that instant: covers
// the broadcast to every leader, even on a loaded machine.
constexpr double kStartMarginSeconds = 0.5;

struct SweepOptions {
  ProbeSettings settings;
  std::optional<std::vector<unsigned>> cpus;
  bool rank_per_core = false;
  std::optional<std::string> json_path;
  std::optional<std::string> html_path;
  bool full = false;
  std::size_t top = 10;
  std::optional<std::uint64_t> ranks;
  double timeout_seconds = 600;
  std::optional<std::string> socket;
  bool verbose = false;
  bool quiet = false;
};

void print_usage(std::ostream& out) {
  out << kUsage;
  for (const auto& spec : probe_option_specs()) {
    std::string help = spec.help;
    // A sweep runs both rounds unless told otherwise (parse()).
    if (spec.name == "mode") help.replace(help.find("(default: isolated)"), 19, "(default: both)");
    out << format_option_help(spec.name, spec.value_name, help);
  }
  out << "\nConfirmation (docs/verdicts.md; the suspects of all nodes share the rate):\n";
  for (const auto& spec : confirmation_option_specs()) {
    out << format_option_help(spec.name, spec.value_name, spec.help);
  }
}

SweepOptions parse(const std::vector<std::string>& args) {
  std::set<std::string> value_options{"cpus", "json", "html", "top", "ranks", "timeout", "socket"};
  for (const auto& spec : probe_option_specs()) value_options.insert(spec.name);
  for (const auto& spec : confirmation_option_specs()) value_options.insert(spec.name);
  const ParsedArgs parsed =
      parse_args(args, value_options, {"verbose", "quiet", "help", "rank-per-core", "full"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  SweepOptions options;
  // Both modes by default: the isolated round is each core's own speed, the
  // concurrent one what a full MPI job sees; a sweep is for the latter.
  options.settings.modes = {Mode::isolated, Mode::concurrent};
  for (const auto& [name, value] : parsed.options) {
    try {
      if (name == "rank-per-core") {
        options.rank_per_core = true;
      } else if (name == "cpus") {
        options.cpus = parse_cpu_list(value);
      } else if (name == "json") {
        options.json_path = value;
      } else if (name == "html") {
        options.html_path = value;
      } else if (name == "full") {
        options.full = true;
      } else if (name == "top") {
        options.top =
            static_cast<std::size_t>(parse_real_value(value, 1, kTopK, "a number of cores"));
      } else if (name == "ranks") {
        options.ranks = static_cast<std::uint64_t>(parse_real_value(value, 1, 1e9, "ranks"));
      } else if (name == "timeout") {
        options.timeout_seconds = parse_real_value(value, 0, 1e6, "seconds");
      } else if (name == "socket") {
        options.socket = value;
      } else if (name == "verbose") {
        options.verbose = true;
      } else if (name == "quiet") {
        options.quiet = true;
      } else if (const OptionSpec* spec = find_probe_option(name)) {
        spec->apply(options.settings, value);
      } else if (const OptionSpec* spec = find_confirmation_option(name)) {
        spec->apply(options.settings, value);
      }
    } catch (const std::invalid_argument& e) {
      throw UsageError("--" + name + ": " + e.what());
    }
  }
  if (options.rank_per_core && options.cpus) {
    throw UsageError(
        "--cpus and --rank-per-core exclude each other: with a rank per core, "
        "the ranks' binding chooses the CPUs");
  }
  return options;
}

std::vector<unsigned> select_cpus(const SweepOptions& options, const Topology& topology) {
  std::vector<unsigned> all;
  for (const auto& pu : topology.pus()) all.push_back(pu.cpu);
  std::vector<unsigned> usable;
  for (unsigned cpu : options.cpus.value_or(all)) {
    const ProcessingUnit* pu = topology.find(cpu);
    if (pu == nullptr) {
      throw UsageError("--cpus: CPU " + std::to_string(cpu) + " is not on this node (it has " +
                       format_cpu_list(all) + ")");
    }
    if (pu->usable()) usable.push_back(cpu);
  }
  if (usable.empty()) throw UsageError("none of the selected CPUs can be probed by this process");
  return usable;
}

// A node's one rank sweeps every core the node lets it use, but Open MPI's
// mpirun binds each rank as it would an application's: to a core (2 ranks
// or fewer) or a socket, by default. That binding is a process affinity,
// not a cgroup's cpuset, so under mpirun it is widened here to every PU the
// cgroup allows except the kernel's isolated CPUs, for every thread, and
// the topology is read again; the probe threads then pin themselves as
// usual. Nowhere else: under Slurm (SLURM_JOB_ID) the binding may be the
// job's allocation on a shared node, and a singleton's affinity (taskset,
// numactl, CPUAffinity=) is someone's choice. There the sweep probes what
// the affinity allows, and says so.
Topology unbound_from_launcher(Topology topology, bool root, bool verbose,
                               const std::string& prefix) {
  std::vector<unsigned> bound;
  std::vector<unsigned> allowed;
  std::string isolated_text;
  std::getline(std::ifstream("/sys/devices/system/cpu/isolated"), isolated_text);
  std::vector<unsigned> isolated;
  try {
    isolated = parse_cpu_list(isolated_text);
  } catch (const std::exception&) {  // unreadable: nothing is isolated
  }
  for (const auto& pu : topology.pus()) {
    if (pu.usable()) bound.push_back(pu.cpu);
    const bool kernel_isolated =
        std::find(isolated.begin(), isolated.end(), pu.cpu) != isolated.end();
    if (pu.usable() || (pu.skip_reason == kOutsideAffinity && !kernel_isolated)) {
      allowed.push_back(pu.cpu);
    }
  }
  if (bound.size() == allowed.size()) return topology;
  const bool mpirun_binding =
      std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr && std::getenv("SLURM_JOB_ID") == nullptr;
  if (!mpirun_binding) {
    if (root) {
      std::cerr << prefix + "this rank may run on CPUs " + format_cpu_list(bound) + " of the " +
                       std::to_string(allowed.size()) +
                       " this node allows (its affinity); only those are probed\n";
    }
    return topology;
  }
  if (!set_process_affinity(allowed)) return topology;
  if (root || verbose) {
    std::cerr << prefix + "mpirun bound this rank to CPUs " + format_cpu_list(bound) +
                     "; sweeping all " + std::to_string(allowed.size()) +
                     " CPUs the node allows (one rank on this node)\n";
  }
  return Topology::load("native");
}

// Pauses this node's corenoised for the sweep (its rounds would be noise in
// ours) and resumes it on every way out. The pause carries its own expiry,
// so a job killed by the watchdog or a signal still leaves the daemon
// running again. A daemon the operator paused stays paused.
class DaemonPause {
 public:
  DaemonPause(const std::optional<std::string>& socket, double seconds, int node) {
    std::string path = socket.value_or("");
    if (path.empty()) {
      const char* env = std::getenv("CORENOISE_SOCKET");
      path = env != nullptr && *env != '\0' ? env : kDefaultControlSocket;
    }
    struct stat info {};
    if (stat(path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) return;  // no daemon here
    try {
      client_ = std::make_unique<ControlClient>(path);
      const json status = client_->request(ControlRequest{StatusRequest{}});
      if (status.value("paused", false)) {
        client_.reset();
        return;
      }
      const json reply = client_->request(ControlRequest{
          PauseRequest{seconds > 0 ? std::optional<double>(seconds + 60) : std::nullopt}});
      if (!reply.value("ok", false)) throw std::runtime_error(reply.value("error", "refused"));
    } catch (const std::exception& e) {
      std::cerr << "corenoise sweep: node " << node << ": could not pause corenoised at " << path
                << " (" << e.what() << "); its rounds may disturb this sweep\n";
      client_.reset();
    }
  }
  ~DaemonPause() {
    if (!client_) return;
    try {
      client_->request(ControlRequest{ResumeRequest{}});
    } catch (const std::exception& e) {
      std::cerr << "corenoise sweep: could not resume corenoised at " << client_->socket_path()
                << " (" << e.what() << "); run `corenoise resume`\n";
    }
  }
  DaemonPause(const DaemonPause&) = delete;
  DaemonPause& operator=(const DaemonPause&) = delete;

 private:
  std::unique_ptr<ControlClient> client_;
};

// How this leader probes its node: with a rank per core, through the
// node's ranks (each on its own core); otherwise with its own runner over
// `cpus`.
struct NodeProbes {
  NodeRanks* ranks = nullptr;
  std::unique_ptr<Runner> runner;  // without ranks only
  std::vector<unsigned> cpus;      // in the ranks' order with a rank per core

  // One round of `mode` starting at `start` (unix seconds).
  RoundSamples run(Mode mode, double start) const {
    if (ranks != nullptr) return ranks->run(mode, start);
    sleep_until_unix_seconds(start);
    return runner->run(mode, cpus);
  }
  // One confirmation round of `plan` starting at `start`; an empty plan (this
  // node has nothing to measure again) is an empty round, at once.
  RoundSamples confirm(Mode mode, double start, const ConfirmationPlan& plan) const {
    if (plan.empty()) return {};
    if (ranks != nullptr) return ranks->run(mode, start, &plan);
    const Runner confirm_runner = runner->for_confirmation(plan.probes);
    sleep_until_unix_seconds(start);
    return confirm_runner.run(mode, plan.cpus);
  }
};

// What a leader needs before any leader starts measuring.
struct LeaderSetup {
  std::optional<Topology> topology;
  NodeProbes probes;
  std::optional<ReportOutputs> outputs;  // leader 0 only
  std::string trace = "off";             // NodeReport::trace
};

// Without a rank per core, one rank per node probes: say so (on leader 0)
// when the job has more.
void warn_about_idle_ranks(MpiEnvironment& env, const SweepOptions& options) {
  if (env.node_index() != 0 || options.rank_per_core || env.world_size() <= env.node_count()) {
    return;
  }
  std::cerr << "corenoise sweep: " + std::to_string(env.world_size()) + " ranks on " +
                   std::to_string(env.node_count()) +
                   " nodes; only one rank per node probes, the others wait (run with -ppn 1, "
                   "or probe a core per rank with --rank-per-core)\n";
}

// Set-up: everything that can fail on one node alone (the topology, the
// CPUs, the output files), so that it fails before any leader starts
// measuring. Says why on stderr and returns false on failure.
bool set_up(MpiEnvironment& env, const SweepOptions& options, NodeRanks* ranks,
            const std::string& prefix, LeaderSetup& setup) {
  const bool root = env.node_index() == 0;
  try {
    setup.topology = Topology::load("native");
    if (ranks == nullptr && env.node_size() == 1) {
      setup.topology =
          unbound_from_launcher(std::move(*setup.topology), root, options.verbose, prefix);
    }
    setup.topology->attach_top_perf("/sys");  // favoured cores are not faults
    setup.probes.ranks = ranks;
    if (ranks != nullptr) {
      if (!ranks->problem().empty()) throw std::runtime_error(ranks->problem());
      setup.probes.cpus = ranks->cpus();
      setup.trace = ranks->trace_status();
    } else {
      setup.probes.cpus = select_cpus(options, *setup.topology);
      setup.probes.runner = std::make_unique<Runner>(options.settings, *setup.topology);
      std::string why_not;
      setup.probes.runner->set_trace(
          trace::open_trace_source(options.settings.trace, setup.probes.cpus, &why_not));
      setup.trace =
          trace::trace_status(options.settings.trace, setup.probes.runner->traced(), why_not);
    }
    if (root) setup.outputs.emplace(options.json_path, options.html_path);
  } catch (const std::exception& e) {
    std::cerr << prefix + e.what() + "\n";  // one write: ranks share stderr
    return false;
  }
  return true;
}

// This node's report before any round: who and what is probed.
NodeReport empty_node_report(const SweepOptions& options, const Topology& topology) {
  NodeReport report;
  report.version = CORENOISE_VERSION;
  report.hostname = local_hostname();
  report.topology_source = topology.source();
  report.this_system = true;
  report.settings = options.settings;
  report.pus = topology.pus();
  return report;
}

// With a rank per core, the leader's view of the other ranks' CPUs is
// "outside its affinity"; what matters is whether a rank probed them.
std::map<unsigned, Cause> cpus_without_rank(const std::vector<ProcessingUnit>& pus,
                                            const std::vector<unsigned>& cpus) {
  std::map<unsigned, Cause> skip_reasons;
  for (const ProcessingUnit& pu : pus) {
    if (std::find(cpus.begin(), cpus.end(), pu.cpu) == cpus.end()) {
      skip_reasons[pu.cpu] = skipped_cause(SkipReason::no_rank);
    }
  }
  return skip_reasons;
}

// One round of `mode` on every node, judged into a ModeReport appended to
// `report`. Every node starts it at the same instant, so that the nodes'
// rounds overlap the way a job's steps do. False on every leader if it
// failed on any.
bool screen(MpiEnvironment& env, const SweepOptions& options, const NodeProbes& probes, Mode mode,
            const std::map<unsigned, Cause>& skip_reasons, const std::string& prefix,
            NodeReport& report) {
  env.barrier_leaders();
  const double start = env.common_start_time(kStartMarginSeconds);
  bool failed = false;
  try {
    const RoundSamples round = probes.run(mode, start);
    report.isa = round.isa;
    report.modes.push_back(
        make_mode_report(round, report.pus, options.settings.round_thresholds(), skip_reasons));
  } catch (const std::exception& e) {
    std::cerr << prefix + std::string(to_string(mode)) + " round failed: " + e.what() + "\n";
    failed = true;
  }
  return !env.any_leader_failed(failed);
}

// Every node's suspects in `screened` are measured again at one instant,
// each beside a reference core. They share the sweep's false-alarm rate, so
// the leaders first agree on how many there are (confirmation.h); the
// number of rounds follows from the sweep's share of suspects, so every
// leader runs the same number, meeting at each. False on every leader if a
// round failed on any.
bool confirm(MpiEnvironment& env, const SweepOptions& options, const NodeProbes& probes, Mode mode,
             const std::vector<ProcessingUnit>& pus, const std::string& prefix,
             ModeReport& screened) {
  const SuspectCount here = count_suspects(screened.verdicts);
  std::array<std::uint64_t, 2> counts{here.suspects, here.screened};
  env.allreduce_sum(std::span<std::uint64_t>(counts));
  struct Aborted {};
  try {
    confirm_mode_report(screened, pus, options.settings, counts[0], counts[1],
                        [&](const ConfirmationPlan& plan) {
                          env.barrier_leaders();
                          const double again_at = env.common_start_time(kStartMarginSeconds);
                          RoundSamples again;
                          bool round_failed = false;
                          try {
                            again = probes.confirm(mode, again_at, plan);
                          } catch (const std::exception& e) {
                            std::cerr << prefix + std::string(to_string(mode)) +
                                             " confirmation round failed: " + e.what() + "\n";
                            round_failed = true;
                          }
                          if (env.any_leader_failed(round_failed)) throw Aborted{};
                          return again;
                        });
  } catch (const Aborted&) {
    return false;
  }
  return true;
}

// The reductions' options (docs/scaling.md), shared with `corenoise collect`.
ReduceOptions reduce_options(const SweepOptions& options, double started,
                             const std::string& prefix) {
  ReduceOptions reduce;
  reduce.settings = options.settings;
  reduce.modes = options.settings.modes;
  reduce.full = options.full;
  reduce.ranks = options.ranks;
  reduce.started_unix_seconds = started;
  reduce.verbose = options.verbose;
  reduce.prefix = prefix;
  return reduce;
}

// One leader's whole sweep: set up, pause the daemon, screen (and confirm)
// each mode, reduce, and let leader 0 write the report. Returns the exit
// code, the same on every leader.
int run_leader(MpiEnvironment& env, const SweepOptions& options) {
  const auto node = static_cast<std::uint32_t>(env.node_index());
  const double started = unix_seconds_now();
  const std::string prefix = "corenoise sweep: node " + std::to_string(node) + ": ";
  warn_about_idle_ranks(env, options);

  // With a rank per core, the node's ranks first agree on their CPUs; they
  // wait for this leader whatever happens next (NodeRanks releases them).
  std::optional<NodeRanks> ranks;
  if (options.rank_per_core) ranks.emplace(env, options.settings);

  LeaderSetup setup;
  const bool ready = set_up(env, options, ranks ? &*ranks : nullptr, prefix, setup);
  if (env.any_leader_failed(!ready)) return kExitFailure;

  const DaemonPause pause(options.socket, options.timeout_seconds, static_cast<int>(node));

  NodeReport report = empty_node_report(options, *setup.topology);
  report.trace = setup.trace;
  const std::map<unsigned, Cause> skip_reasons =
      ranks ? cpus_without_rank(report.pus, setup.probes.cpus) : std::map<unsigned, Cause>{};
  for (Mode mode : options.settings.modes) {
    if (!screen(env, options, setup.probes, mode, skip_reasons, prefix, report)) {
      return kExitFailure;
    }
    if (!options.settings.confirm) continue;
    if (!confirm(env, options, setup.probes, mode, report.pus, prefix, report.modes.back())) {
      return kExitFailure;
    }
  }
  if (ranks) ranks->release();

  Reduction reduction = reduce_reports(env, &report, "", reduce_options(options, started, prefix));
  reduction.report.layout = options.rank_per_core ? "rank-per-core" : "rank-per-node";

  return agree_on_exit_code(env, prefix, [&] {
    const ClusterReport& cluster = reduction.report;
    std::ostream& text = setup.outputs->write(cluster, "sweep");
    print_sweep_summary(text, cluster, options.top, options.quiet);
    return cluster.healthy ? kExitHealthy : kExitUnhealthy;
  });
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args) {
  SweepOptions options;
  return run_mpi_command({"sweep", print_usage,
                          [&](const std::vector<std::string>& a) {
                            options = parse(a);
                            return options.timeout_seconds;
                          },
                          [&](MpiEnvironment& env) { return run_leader(env, options); },
                          [&](MpiEnvironment& env) {
                            if (!options.rank_per_core) return;
                            NodeRanks ranks(env, options.settings);
                            ranks.follow();
                          }},
                         args);
}

}  // namespace corenoise
