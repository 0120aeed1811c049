// Why a core has its state, as data: the figures and names its sentence
// cites, and nothing that is only words. judge() fills it from a core's
// figures (cause_of), the confirmation, the daemon's thermal counters and
// its persistence add to it, and it travels where the verdict travels: the
// daemon's history and replies, the sweep's worst list and cells, a job's
// view of its node's daemon. The sentence is made from it by the views
// (probe/verdict_text.h), so that every command says the same.
//
// Fixed and small on purpose: intervals are held as the reported 95 %
// bounds, not as the Uncertainty behind them, and the tracer's culprits
// only as many as a sentence names (kNamedCulprits).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probe/probe_kinds.h"
#include "probe/trace/culprit_matcher.h"

namespace corenoise {

struct CoreFigures;

// The culprits a sentence names: the largest few above half a percent.
inline constexpr std::size_t kNamedCulprits = 3;

// Why a CPU was not measured: not among the CPUs asked for; no round yet;
// the round was cancelled before it sampled; busy with other work
// (Cause::figure: its busy share since the last round); no rank of the
// sweep's job on it; `other`: the layer that skipped it gave its reason in
// Cause::detail (the topology: "disallowed by cgroup/cpuset"; the runner:
// its error; the daemon: an offline CPU).
enum class SkipReason : std::uint8_t { not_selected, not_probed, no_samples, busy, no_rank, other };

// Where a noisy core's time went.
struct LostTime {
  double noise_ratio = 0;  // share of the windows' time lost
  std::uint64_t detours = 0;
  double max_seconds = 0;    // the longest detour
  double total_seconds = 0;  // all lost time
  // As far as the kernel's counters tell (untraced).
  std::optional<double> preempted_seconds, steal_seconds;
  std::uint64_t preemptions = 0;
  std::uint64_t interrupts = 0;  // interrupts and softirqs counted
  // From the tracer, where it traced: the named culprits (at most
  // kNamedCulprits, each ≥ 0.5 % of the lost time), the rest it matched,
  // and whether it lost events.
  struct Traced {
    std::vector<trace::Culprit> named;
    double matched_seconds = 0;
    bool overran = false;
    bool operator==(const Traced&) const = default;
  };
  std::optional<Traced> traced;
  bool operator==(const LostTime&) const = default;
};

struct Cause {
  // The state the figures below explain: the judged one, or for a
  // transient core the suspected one; ok where there is nothing to say,
  // skipped where the CPU was not measured.
  CoreState state = CoreState::ok;
  std::string cpu_kind;  // whose reference ("default", "P", …)

  // The cited figure in base units (throttled: the clock in Hz; contended:
  // the bandwidth in B/s), its reference (throttled: the kind's clock), the
  // ratio that decided (a slowdown, or for noisy the excess noise) and its
  // 95 % interval where known.
  std::optional<double> figure, reference, ratio;
  std::optional<std::array<double, 2>> interval;
  std::optional<LostTime> lost;          // noisy
  std::optional<double> clock_read_low;  // noisy: the clock's slowdown, where it read low
  // The confirmation's re-measurement: held up or not, after how many
  // rounds, and its figure (on the test's scale) where it measured.
  struct Confirmation {
    bool confirmed = false;
    int rounds = 0;
    std::optional<double> figure;
    bool operator==(const Confirmation&) const = default;
  };
  std::optional<Confirmation> confirmation;
  // The kernel's throttle events during the round (the daemon's counters).
  struct Thermal {
    std::uint64_t core_events = 0, package_events = 0;
    bool operator==(const Thermal&) const = default;
  };
  std::optional<Thermal> thermal;
  // The daemon's persistence, for a core transient over its rounds: its
  // latest unhealthy round's state (whose cause the rest is), unhealthy in
  // `unhealthy` of the `rounds` remembered, `needed` of which make it
  // persistent.
  struct Recurrence {
    CoreState state = CoreState::ok;
    std::size_t unhealthy = 0, rounds = 0, needed = 0;
    bool operator==(const Recurrence&) const = default;
  };
  std::optional<Recurrence> recurrence;
  // Skipped only.
  std::optional<SkipReason> skipped;
  std::string detail;  // the skipping layer's own reason, for SkipReason::other

  // Nothing to say: no state's figures, nothing added to them (left off
  // the wire where every core of a node travels).
  bool says_nothing() const {
    return state == CoreState::ok && !confirmation && !thermal && !recurrence;
  }

  bool operator==(const Cause&) const = default;
};

// The cause of a judged core, from its figures and CoreFigures::Why (ok
// and an empty cause for a state no test decided).
Cause cause_of(const CoreFigures& core);

// True where the figures the state's sentence cites are all there and
// finite (a throttled core's clock, reference and ratio; a noisy core's
// lost time and excess; a busy CPU's share; …); cause_from_json refuses a
// cause that is not.
bool complete(const Cause& cause);

// A CPU not measured, and why.
Cause skipped_cause(SkipReason reason, std::string detail = {});

// A culprit as the JSON carries it, here and in the probe report's trace
// (report_json.cpp): kind, seconds, detours, and name, id and scheduling
// where known.
nlohmann::json culprit_json(const trace::Culprit& culprit);

// The wire form: every field under its own key, absent where empty (and
// where not finite). cause_from_json throws std::exception on a malformed
// cause, or one not complete().
nlohmann::json to_json(const Cause& cause);
Cause cause_from_json(const nlohmann::json& j);

// The cause a document holds under "why": Cause{} where there is none (a
// document of an older corenoise) or it is refused. Causes come from other
// processes (the daemon, a sweep's nodes, a job's ranks): an odd cause
// costs that cause, never the document around it.
Cause cause_in(const nlohmann::json& holder);

}  // namespace corenoise
