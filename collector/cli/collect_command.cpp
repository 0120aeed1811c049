#include "collector/cli/collect_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "collector/cli/mpi_command_runner.h"
#include "collector/cluster/cluster_reduction.h"
#include "collector/mpi/mpi_environment.h"
#include "collector/report/cluster_report_json.h"
#include "collector/report/report_outputs.h"
#include "collector/report/sweep_summary.h"
#include "daemon/control/control_client.h"
#include "daemon/control/control_protocol.h"
#include "daemon/control/control_replies.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

using nlohmann::json;

constexpr const char* kUsage = R"(Usage: mpiexec.mpich -ppn 1 -f HOSTS corenoise collect [OPTIONS]
       mpirun.openmpi --map-by ppr:1:node --hostfile HOSTS corenoise collect [OPTIONS]
       srun --ntasks-per-node=1 --mpi=pmi2|pmix corenoise collect [OPTIONS]

Reduces the latest results of every node's corenoised across the nodes of
the allocation (one rank per node): each node's leader reads its daemon's
results over the control socket, or with --trigger makes every daemon run a
round at the same instant first. Prints the same report as `corenoise sweep`
(schema: docs/sweep.md), then publishes the cluster reference and each
core's cluster-relative slowdown back to each daemon, which exports them as
corenoise_cluster_slowdown_ratio and corenoise_cluster_publish_timestamp_seconds.
A node whose daemon is missing or refuses is reported (its `error` in the
JSON) and skipped.

Exit status: 0 all healthy, 1 error or bad input (including any node whose
daemon could not be read or published to; the others are still reduced and
published), 2 unhealthy cores or outlier nodes.

Options:
  --socket PATH             corenoised's control socket on every node (default:
                            $CORENOISE_SOCKET, else /run/corenoise/ctl.sock)
  --trigger                 make every daemon run a round at one common instant
                            first, and reduce those rounds
  --mode MODE               the triggered round's mode: isolated, concurrent or
                            both (default: isolated)
  --json FILE               write the cluster report as JSON to FILE ('-': stdout)
  --html FILE               write the report as one self-contained HTML page
  --full                    also gather every core's cells to rank 0
  --top N                   worst cores to print, 1 to 64 (default: 10)
  --timeout SECONDS         abort the whole job if not finished by then; also
                            bounds the wait for a triggered round; 0 disables
                            (default: 600)
  --verbose                 per node: bytes sent in collectives, reduction time
  --quiet                   print only the summary line (and errors)
  --help                    this text
)";

// Time between leader 0 choosing the trigger instant and that instant.
constexpr double kTriggerMarginSeconds = 1.0;

struct CollectOptions {
  std::optional<std::string> socket;
  bool trigger = false;
  std::vector<Mode> modes{Mode::isolated};
  std::optional<std::string> json_path;
  std::optional<std::string> html_path;
  bool full = false;
  std::size_t top = 10;
  double timeout_seconds = 600;
  bool verbose = false;
  bool quiet = false;
};

CollectOptions parse(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args, {"socket", "mode", "json", "html", "top", "timeout"},
                                       {"trigger", "full", "verbose", "quiet", "help"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  CollectOptions o;
  for (const auto& [name, value] : parsed.options) {
    try {
      if (name == "socket") {
        o.socket = value;
      } else if (name == "trigger") {
        o.trigger = true;
      } else if (name == "mode") {
        if (value == "isolated") {
          o.modes = {Mode::isolated};
        } else if (value == "concurrent") {
          o.modes = {Mode::concurrent};
        } else if (value == "both") {
          o.modes = {Mode::isolated, Mode::concurrent};
        } else {
          throw UsageError("--mode: expected isolated, concurrent or both, got '" + value + "'");
        }
      } else if (name == "json") {
        o.json_path = value;
      } else if (name == "html") {
        o.html_path = value;
      } else if (name == "full") {
        o.full = true;
      } else if (name == "top") {
        o.top = static_cast<std::size_t>(parse_real_value(value, 1, kTopK, "a number of cores"));
      } else if (name == "timeout") {
        o.timeout_seconds = parse_real_value(value, 0, 1e6, "seconds");
      } else if (name == "verbose") {
        o.verbose = true;
      } else if (name == "quiet") {
        o.quiet = true;
      }
    } catch (const std::invalid_argument& e) {
      throw UsageError("--" + name + ": " + e.what());
    }
  }
  return o;
}

std::string socket_path(const CollectOptions& options) {
  if (options.socket && !options.socket->empty()) return *options.socket;
  const char* env = std::getenv("CORENOISE_SOCKET");
  return env != nullptr && *env != '\0' ? env : kDefaultControlSocket;
}

// This node's cores against the cluster's reference core of their kind, as
// the daemon's publish wants them: every ratio corenoise_slowdown_ratio has
// against the node's reference, here against the cluster's.
PublishRequest publication(const NodeReport& report, const Reduction& reduced, double now) {
  PublishRequest p;
  p.published_unix_seconds = now;
  json kinds = json::array();
  std::set<std::pair<int, std::size_t>> listed;
  for (const ModeReport& mode : report.modes) {
    for (const CoreFigures& core : mode.verdicts.cores) {
      const auto slot = reduced.kinds.find(core.kind);
      if (!slot) continue;
      const ClusterReference ref = cluster_reference(*reduced.histograms, mode.mode, *slot);
      if (listed.insert({static_cast<int>(mode.mode), *slot}).second) {
        json k = {{"mode", to_string(mode.mode)}, {"kind", core.kind}};
        for (const ProbeDescriptor& d : kProbeDescriptors) {
          if (ref.figure[d.kind]) k[std::string(d.figure_name)] = *ref.figure[d.kind];
        }
        kinds.push_back(std::move(k));
      }
      if (core.state == CoreState::skipped) continue;
      for (const auto& [probe, ratio] : cluster_ratios(core, ref)) {
        p.slowdowns.push_back({core.cpu, probe, mode.mode, ratio});
      }
    }
  }
  p.reference = {{"kinds", kinds}};
  return p;
}

// Asks this node's daemon for a round at `at` (every node's at once) and
// waits for it; what went wrong, or empty.
std::string trigger_round(const ControlClient& client, const CollectOptions& options, double at) {
  try {
    RunRequest run;
    run.at_unix_seconds = at;
    run.modes = options.modes;
    const double wait = options.timeout_seconds > 0 ? options.timeout_seconds : 600;
    const json reply = client.request(
        ControlRequest{run},
        std::chrono::milliseconds(static_cast<long long>((at - unix_seconds_now() + wait) * 1e3)));
    if (!reply.value("ok", false)) {
      return "run refused: " + reply.value("error", std::string("no reason given"));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// This node's latest rounds from its daemon, or nullopt with `error` set.
std::optional<NodeReport> fetch_results(const ControlClient& client, const std::string& path,
                                        std::string& error) {
  try {
    const json reply = client.request(ControlRequest{ResultsRequest{}});
    if (!reply.value("ok", false)) {
      error = "results refused: " + reply.value("error", std::string("no reason given"));
      return std::nullopt;
    }
    NodeReport report = reply.get<ResultsReply>().report;
    if (!report.modes.empty()) return report;
    error = "corenoised at '" + path + "' has no results yet";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

// Sends the cluster's reference back to this node's daemon; false (and
// why, on stderr) if it was not taken.
bool publish_reference(const ControlClient& client, const NodeReport& report,
                       const Reduction& reduction, const CollectOptions& options,
                       const std::string& prefix) {
  try {
    const json reply =
        client.request(ControlRequest{publication(report, reduction, unix_seconds_now())});
    if (!reply.value("ok", false)) {
      throw std::runtime_error("publish refused: " +
                               reply.value("error", std::string("no reason given")));
    }
    if (options.verbose) {
      std::cerr << prefix + "published " + std::to_string(reply.get<PublishReply>().slowdowns) +
                       " slowdowns\n";
    }
  } catch (const std::exception& e) {
    std::cerr << prefix + e.what() + "\n";  // one write: ranks share stderr
    return false;
  }
  return true;
}

// The summary on the root's outputs; the exit code every node agrees on.
int report_cluster(MpiEnvironment& env, const CollectOptions& options, const std::string& prefix,
                   std::optional<ReportOutputs>& outputs, const Reduction& reduction,
                   bool some_node_failed) {
  return agree_on_exit_code(env, prefix, [&] {
    const ClusterReport& cluster = reduction.report;
    std::ostream& text = outputs->write(cluster, "collect");
    print_sweep_summary(text, cluster, options.top, options.quiet, "collect");
    for (const ClusterNode& n : cluster.nodes) {
      if (!n.error.empty()) {
        text << "corenoise collect: node " << n.index << " skipped: " << n.error << '\n';
      }
    }
    return some_node_failed ? kExitFailure : cluster.healthy ? kExitHealthy : kExitUnhealthy;
  });
}

int run_leader(MpiEnvironment& env, const CollectOptions& options) {
  const bool root = env.node_index() == 0;
  const std::string prefix = "corenoise collect: node " + std::to_string(env.node_index()) + ": ";
  const double started = unix_seconds_now();
  const std::string path = socket_path(options);

  std::optional<ReportOutputs> outputs;
  bool failed = false;
  try {
    if (root) outputs.emplace(options.json_path, options.html_path);
  } catch (const std::exception& e) {
    std::cerr << prefix + e.what() + "\n";  // one write: ranks share stderr
    failed = true;
  }
  if (env.any_leader_failed(failed)) return kExitFailure;

  // Each node on its own: a node that fails here contributes nothing but
  // still takes part in every collective below, so nobody waits for it.
  const ControlClient client(path);
  std::string error;
  std::optional<NodeReport> report;
  if (options.trigger) {
    env.barrier_leaders();
    error = trigger_round(client, options, env.common_start_time(kTriggerMarginSeconds));
  }
  if (error.empty()) report = fetch_results(client, path, error);
  if (!error.empty()) std::cerr << prefix + error + " (skipped)\n";

  ReduceOptions reduce;
  if (report) reduce.settings = report->settings;
  reduce.full = options.full;
  reduce.started_unix_seconds = started;
  reduce.verbose = options.verbose;
  reduce.prefix = prefix;
  Reduction reduction = reduce_reports(env, report ? &*report : nullptr, error, reduce);
  reduction.report.layout = "daemons";

  const bool publish_failed =
      report && !publish_reference(client, *report, reduction, options, prefix);
  const bool some_node_failed = env.any_leader_failed(publish_failed || !report);
  return report_cluster(env, options, prefix, outputs, reduction, some_node_failed);
}

}  // namespace

int run_collect_command(const std::vector<std::string>& args) {
  CollectOptions options;
  return run_mpi_command({"collect", [](std::ostream& out) { out << kUsage; },
                          [&](const std::vector<std::string>& a) {
                            options = parse(a);
                            // The daemons' rounds are bounded by --timeout; the job by a minute
                            // more.
                            return options.timeout_seconds > 0 ? options.timeout_seconds + 60 : 0.0;
                          },
                          [&](MpiEnvironment& env) { return run_leader(env, options); }},
                         args);
}

}  // namespace corenoise
