#include "collector/cli/probe_command.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "collector/report/table.h"
#include "probe/cpu_list.h"
#include "probe/report_json.h"
#include "probe/runner.h"

namespace corenoise {
namespace {

constexpr const char* kUsage = R"(Usage: corenoise probe [OPTIONS]

Runs one round of fixed-work probes pinned to each CPU of this node and
prints, for every CPU, its matmul time and rate, slowdown against the
node's reference core of its kind, effective clock, time lost to detours,
memory bandwidth, and a verdict: ok, noisy, throttled, contended or slow.

Exit status: 0 all probed CPUs ok, 1 error or bad input, 2 unhealthy CPUs.

Selection and output:
  --cpus LIST               CPUs to probe, e.g. 0-3,8 (default: every usable CPU)
  --topology SPEC           native (default), an hwloc XML file, or
                            synthetic:DESC; another machine is listed, not probed
  --sys-root DIR            where /sys is (default /sys): each CPU's designed top
                            performance (ACPI CPPC highest_perf, else cpufreq
                            cpuinfo_max_freq), so that favoured cores are not faults
  --json FILE               write the report as JSON to FILE; '-' writes it to
                            stdout instead of the table (schema: docs/json.md)
  --quiet                   print only the summary line (and errors)
  --help                    this text

Probe settings (the same names as in corenoised's config file):
)";

struct CommandOptions {
  ProbeSettings settings;
  std::optional<std::vector<unsigned>> cpus;
  std::string topology = "native";
  std::string sys_root = "/sys";
  std::optional<std::string> json_path;
  bool quiet = false;
};

void print_usage(std::ostream& out) {
  out << kUsage;
  for (const auto& spec : probe_option_specs()) {
    out << format_option_help(spec.name, spec.value_name, spec.help);
  }
  out << "\nConfirmation (docs/verdicts.md):\n";
  for (const auto& spec : confirmation_option_specs()) {
    out << format_option_help(spec.name, spec.value_name, spec.help);
  }
}

CommandOptions parse(const std::vector<std::string>& args) {
  std::set<std::string> value_options{"cpus", "topology", "sys-root", "json"};
  for (const auto& spec : probe_option_specs()) value_options.insert(spec.name);
  for (const auto& spec : confirmation_option_specs()) value_options.insert(spec.name);
  const ParsedArgs parsed = parse_args(args, value_options, {"quiet", "help"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  CommandOptions options;
  for (const auto& [name, value] : parsed.options) {
    try {
      if (name == "cpus") {
        options.cpus = parse_cpu_list(value);
      } else if (name == "topology") {
        options.topology = value;
      } else if (name == "sys-root") {
        if (value.empty()) throw std::invalid_argument("expected a directory, got ''");
        options.sys_root = value;
      } else if (name == "json") {
        options.json_path = value;
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
  return options;
}

// The CPUs to probe: the selection (each must exist), or every usable PU.
// A selected CPU this process may not use stays in the report as skipped.
std::vector<unsigned> select_cpus(const CommandOptions& options, const Topology& topology) {
  std::vector<unsigned> all;
  for (const auto& pu : topology.pus()) all.push_back(pu.cpu);
  std::vector<unsigned> wanted = options.cpus.value_or(all);
  std::vector<unsigned> usable;
  for (unsigned cpu : wanted) {
    const ProcessingUnit* pu = topology.find(cpu);
    if (pu == nullptr) {
      throw UsageError("--cpus: CPU " + std::to_string(cpu) + " is not on this machine (it has " +
                       format_cpu_list(all) + ")");
    }
    if (pu->usable()) usable.push_back(cpu);
  }
  // Asking for CPUs of this machine and getting none probed is an error;
  // another machine's topology is only listed.
  if (usable.empty() && topology.is_this_system()) {
    std::string why;
    for (unsigned cpu : wanted) {
      why += (why.empty() ? "" : ", ") + std::string("cpu ") + std::to_string(cpu) + " " +
             topology.find(cpu)->skip_reason;
    }
    throw UsageError("none of the selected CPUs can be probed by this process (" + why + ")");
  }
  return usable;
}

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { clear(); }
  void show(Mode mode, std::size_t done, std::size_t total) {
    if (!enabled_) return;
    std::cerr << "\rcorenoise: " << to_string(mode) << " round, " << done << "/" << total
              << " steps " << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// Measures `cpus` in each mode of the settings into `report`, confirming
// suspects where asked.
void measure(NodeReport& report, const Topology& topology, const std::vector<unsigned>& cpus,
             const CommandOptions& options) {
  Runner runner(options.settings, topology);
  report.isa = runner.isa();
  std::string why_not;
  runner.set_trace(trace::open_trace_source(options.settings.trace, cpus, &why_not));
  report.trace = trace::trace_status(options.settings.trace, runner.traced(), why_not);
  const bool json_to_stdout = options.json_path && *options.json_path == "-";
  ProgressLine progress(!options.quiet && !json_to_stdout && isatty(STDERR_FILENO));
  for (Mode mode : options.settings.modes) {
    const RoundSamples round = runner.run(
        mode, cpus, [&](std::size_t done, std::size_t total) { progress.show(mode, done, total); });
    ModeReport mode_report =
        make_mode_report(round, report.pus, options.settings.round_thresholds());
    // Suspects are measured again, each beside a reference core, before
    // they count (confirmation.h).
    if (options.settings.confirm) {
      const SuspectCount here = count_suspects(mode_report.verdicts);
      confirm_mode_report(mode_report, report.pus, options.settings, here.suspects, here.screened,
                          [&](const ConfirmationPlan& plan) {
                            if (plan.empty()) return RoundSamples{};
                            return runner.for_confirmation(plan.probes).run(mode, plan.cpus);
                          });
    }
    report.modes.push_back(std::move(mode_report));
  }
}

// The JSON (to its file or stdout), the table and the summary line.
void print_outputs(const NodeReport& report, const CommandOptions& options,
                   std::ofstream* json_file) {
  const std::string summary = "corenoise: " + summary_line(report);
  if (options.json_path) {
    const std::string text = to_json(report).dump(2) + "\n";
    if (json_file) {
      *json_file << text;
      json_file->flush();
      if (!*json_file)
        throw std::runtime_error("--json: error writing '" + *options.json_path + "'");
    } else {
      std::cout << text;
    }
  }
  const bool table_to_stdout = !options.quiet && !(options.json_path && *options.json_path == "-");
  if (table_to_stdout) print_table(std::cout, report);
  (options.json_path && *options.json_path == "-" ? std::cerr : std::cout) << summary << std::endl;
}

int run(const CommandOptions& options) {
  Topology topology = Topology::load(options.topology);
  // Another machine's topology is only listed: this /sys is not its.
  if (topology.is_this_system()) topology.attach_top_perf(options.sys_root);
  const std::vector<unsigned> cpus = select_cpus(options, topology);

  // Open the output before measuring: a bad path should cost nothing.
  std::unique_ptr<std::ofstream> json_file;
  if (options.json_path && *options.json_path != "-") {
    json_file = std::make_unique<std::ofstream>(*options.json_path);
    if (!*json_file) throw UsageError("--json: cannot write '" + *options.json_path + "'");
  }

  NodeReport report;
  report.version = CORENOISE_VERSION;
  report.hostname = local_hostname();
  report.topology_source = topology.source();
  report.this_system = topology.is_this_system();
  report.settings = options.settings;
  report.pus = topology.pus();
  if (topology.is_this_system() && !cpus.empty()) measure(report, topology, cpus, options);
  print_outputs(report, options, json_file.get());
  return report.healthy() ? kExitHealthy : kExitUnhealthy;
}

}  // namespace

int run_probe_command(const std::vector<std::string>& args) {
  return run_local_command("probe", args, print_usage, [&] { return run(parse(args)); });
}

}  // namespace corenoise
