// What a round measures and how verdicts are drawn, and the one table of
// named options that sets them. `corenoise probe` reads the options from its
// command line; corenoised will read the same names from its config file, so
// both accept and explain exactly the same settings.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/matmul.h"
#include "probe/probe_kinds.h"
#include "probe/trace/trace_source.h"

namespace corenoise {

enum class Mode { isolated, concurrent };

std::string_view to_string(Mode mode);

struct ProbeSettings {
  std::vector<ProbeKind> probes = kDefaultProbeKinds;
  std::vector<Mode> modes{Mode::isolated};
  int samples = 7;
  int matmul_size = 128;
  Dtype dtype = Dtype::f64;
  int reps = 32;
  std::optional<Isa> isa;  // nullopt: the widest the CPU supports
  double detour_window_seconds = 0.025;
  double detour_threshold_seconds = 0;  // 0: derived per core, at least 1 µs
  std::uint64_t stream_bytes = 0;       // 0: from the core's LLC share
  std::string proc_root = "/proc";
  // Named culprits (probe/trace/): whether the detour windows are traced.
  // The runner does not read it; whoever opens the trace source does.
  trace::TraceMode trace = trace::TraceMode::automatic;
  Thresholds thresholds;
  // Confirmation of suspects (confirmation.h): `corenoise probe` and
  // `sweep` only; the daemon judges persistence over its rounds instead.
  bool confirm = true;
  double false_alarm_rate = 0.05;  // of any confirmed healthy core, per probe or sweep
  int confirm_samples = 21;        // samples of each re-measured core: a longer look
  // With confirmation, the level at which a round's core becomes a suspect:
  // looser than thresholds.alpha, since the re-test, not the screen, keeps
  // the false-alarm rate; the screen only trades cost for power.
  double screen_alpha = 0.1;
  // The settings of a confirmation round: these, with confirm_samples, and
  // of these probes only those in `needed` (the suspects' tests read no
  // other figure: ConfirmationPlan::probes).
  ProbeSettings for_confirmation(const std::vector<ProbeKind>& needed) const;
  // The thresholds a probe or sweep judges its rounds with: at screen_alpha
  // when it confirms, else at thresholds.alpha.
  Thresholds round_thresholds() const;

  bool runs(ProbeKind probe) const;
};

// One named option: `--NAME VALUE` on a command line, `NAME = VALUE` in a
// config file.
struct OptionSpec {
  std::string name;
  std::string value_name;  // e.g. "N", "LIST", "SECONDS"
  std::string help;        // one line; says the default
  // Parses `value` into the settings; throws std::invalid_argument with a
  // message saying what was expected (the caller adds where it came from).
  std::function<void(ProbeSettings&, std::string_view)> apply;
};

// A finite number within [lo, hi]; throws std::invalid_argument("got 'X',
// expected WHAT from LO to HI"). Shared by every option table.
double parse_real_value(std::string_view text, double lo, double hi, std::string_view what);

// One --help entry: "  --NAME VALUE" then the help text, wrapped to 79
// columns and indented under itself.
std::string format_option_help(const std::string& name, const std::string& value_name,
                               const std::string& help);

// Every probe and threshold option, in --help order.
const std::vector<OptionSpec>& probe_option_specs();
// The spec named `name`, or null.
const OptionSpec* find_probe_option(std::string_view name);
// The confirmation options of `corenoise probe` and `sweep` (confirm,
// false-alarm-rate), which the daemon does not take.
const std::vector<OptionSpec>& confirmation_option_specs();
const OptionSpec* find_confirmation_option(std::string_view name);

}  // namespace corenoise
