// One node's results: every PU of the topology with its figures and verdict
// for each mode that ran. What `corenoise probe --json` prints, what the
// daemon will serve from its snapshot, and what the collector reduces.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/analysis.h"
#include "probe/confirmation.h"
#include "probe/runner.h"
#include "probe/settings.h"
#include "probe/topology.h"

namespace corenoise {

struct ModeReport {
  Mode mode = Mode::isolated;
  double started_unix_seconds = 0;
  double duration_seconds = 0;
  bool cancelled = false;
  // verdicts.cores has one entry per PU of NodeReport::pus, in that order;
  // PUs not measured are `skipped` with the reason as cause.
  ModeVerdicts verdicts;
  // The confirmation round of this mode's suspects, where one ran.
  struct ConfirmationRound {
    std::size_t suspects = 0;         // re-measured here
    std::size_t suspects_judged = 0;  // sharing the false-alarm rate (the sweep's, all nodes)
    std::size_t screened = 0;         // cores screened (the sweep's, all nodes)
    std::size_t rounds = 0;           // confirmation rounds each suspect had to pass
    double alpha = 0;                 // each suspect's re-test level
    double duration_seconds = 0;      // all of them
    std::vector<ProbeKind> probes;    // what the first of them ran (ConfirmationPlan::probes)
    std::size_t confirmed = 0;
  };
  std::optional<ConfirmationRound> confirmation;
};

struct NodeReport {
  std::string version;
  std::string hostname;
  std::string topology_source;
  bool this_system = false;
  ProbeSettings settings;
  Isa isa = Isa::baseline;
  std::vector<ProcessingUnit> pus;
  std::vector<ModeReport> modes;  // in the order they ran
  // Whether the rounds were traced (probe/trace/): "on", "off" (not asked
  // for), or "unavailable: WHY" (asked for by auto, and not possible here).
  std::string trace = "off";

  // The state of PU `index` over all modes: the first unhealthy verdict in
  // mode order, else the first transient, else ok if measured in any mode,
  // else skipped.
  CoreState state(std::size_t index) const;
  // The mode whose figures explain state(index).
  std::size_t deciding_mode(std::size_t index) const;
  // PU `index` merged over all modes: the verdict and figures of its
  // deciding mode, with that mode, so that a view showing one PU's overall
  // state shows the figures and the mode it came from, never another
  // mode's. Requires !modes.empty(); `figures` points into modes.
  struct Overall {
    Mode mode = Mode::isolated;
    const CoreFigures* figures = nullptr;
  };
  Overall overall(std::size_t index) const;
  // How many PUs are in each state (overall).
  std::size_t count(CoreState state) const;
  // True if no PU is unhealthy (ok, transient or skipped).
  bool healthy() const;
};

// This machine's host name ("" if unknown): for people only, never a key.
std::string local_hostname();

// Why a PU that no round has measured yet is not: not probed, or where it
// cannot be, the topology's reason.
Cause unprobed_cause(const ProcessingUnit& pu);

// A ModeReport for all of `pus`: measured CPUs from `round`, the others
// skipped with their cause in `skip_causes` (by cpu), else their
// skip_reason, else not selected.
ModeReport make_mode_report(const RoundSamples& round, const std::vector<ProcessingUnit>& pus,
                            const Thresholds& thresholds,
                            const std::map<unsigned, Cause>& skip_causes = {});

// Confirms the suspects of a screened mode report: confirmation_rounds()
// rounds, each planned from the cores still unhealthy and measured by
// `run_round` (in report.mode), applied by apply_confirmation().
// `suspects_judged` and `screened` are the counts the false-alarm rate is
// shared over: this node's, or the whole sweep's. `run_round` is called for
// every round, with an empty plan where this node has nothing left to
// re-measure (a sweep's leaders meet at each round), and must then return
// an empty round. Does nothing when suspects_judged is 0.
using ConfirmationRunner = std::function<RoundSamples(const ConfirmationPlan&)>;
void confirm_mode_report(ModeReport& report, const std::vector<ProcessingUnit>& pus,
                         const ProbeSettings& settings, std::size_t suspects_judged,
                         std::size_t screened, const ConfirmationRunner& run_round);

}  // namespace corenoise
