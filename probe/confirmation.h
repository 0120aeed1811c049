// Confirmation: a suspect is re-measured before it counts. Pure: planning
// and judging only; the caller runs the round (probe, sweep).
//
// A round's verdicts are each a test at the per-core level suspect-alpha;
// across thousands of cores some clear it by chance, and a one-off event
// (the hypervisor taking a vCPU for a second) clears it for real but is
// gone a moment later. So the suspects — the cores a round calls
// unhealthy — are measured again in a short round of their own, each
// followed by a reference core of its kind (they take turns, so drift
// reaches both alike), and each suspect is re-tested for the state it was
// suspected of, against those reference cores, at the level
// false_alarm_rate / (number of suspects judged together). Rounds being
// independent, the chance that any healthy core is confirmed is at most
// false_alarm_rate, however many cores were screened (docs/verdicts.md).
// A suspect not confirmed is `transient`, its figures kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "probe/analysis.h"
#include "probe/settings.h"

namespace corenoise {

struct ConfirmationPlan {
  // In the order to measure: each suspect, then its reference core.
  std::vector<unsigned> cpus;
  std::vector<unsigned> suspects;
  // Each suspect's reference core (shared by several once a kind has
  // kMaxReferencesPerKind), or none: parallel to `suspects`.
  std::vector<std::optional<unsigned>> partners;
  std::vector<unsigned> references;  // the reference cores (each once)
  // The probes whose figures re-test the suspects' states (probes_to_confirm),
  // in ProbeKind order: a confirmation runs these only.
  std::vector<ProbeKind> probes;
  bool empty() const { return suspects.empty(); }
};

// The probes whose figures the test of `state` reads: throttled the clock,
// noisy the detour windows, contended the stream, slow the matmul (or, in a
// round without it, the clock) and the detour windows (its noise factor).
std::vector<ProbeKind> probes_to_confirm(CoreState state);

// The suspects of one mode's verdicts, each paired with a measured core of
// its kind that is not a suspect: the ones nearest the kind's reference
// (expected slowdown nearest 1), taken in turn, at most
// kMaxReferencesPerKind of them. Every core of a round is a look that costs
// confirm-samples samples, and the re-test reads the references' median, so
// past three (a median that one odd reference cannot move) more references
// cost time and buy little. A suspect with no such core (every core of its
// kind is a suspect) is measured without a partner, against the kind's
// other suspects' median.
ConfirmationPlan plan_confirmation(const ModeVerdicts& screened);
inline constexpr std::size_t kMaxReferencesPerKind = 3;

// A screened round's suspects and measured cores: what the false-alarm
// rate is shared over (a sweep adds them up over its nodes).
struct SuspectCount {
  std::uint64_t suspects = 0;
  std::uint64_t screened = 0;
};
SuspectCount count_suspects(const ModeVerdicts& screened);

// The level each suspect is re-tested at in each of `rounds` rounds: the
// family's false-alarm rate shared among `suspects` (Bonferroni), spread
// over the rounds, which a healthy core must all pass:
// (false_alarm_rate / suspects)^(1/rounds). 0.5 at most.
double confirmation_alpha(double false_alarm_rate, std::size_t suspects, std::size_t rounds = 1);

// How many confirmation rounds a suspect must pass. The re-test's level
// holds where the samples' error model does; what it misses shows, at
// scale, as the share of screened cores that are suspects. A healthy core
// that looks bad in a round does so about that often (less: real faults
// are among the suspects), so with independent rounds it passes k more
// with probability about p^k, and `suspects` · p^k ≤ false_alarm_rate gives
// k, where p is the 95 % upper Wilson bound of suspects / screened. Below
// kMinScreenedForSuspectRate screened cores the share says nothing and
// one round it is; never more than kMaxConfirmationRounds.
std::size_t confirmation_rounds(double false_alarm_rate, std::size_t suspects,
                                std::size_t screened);
inline constexpr std::size_t kMinScreenedForSuspectRate = 64;
inline constexpr std::size_t kMaxConfirmationRounds = 4;

// Applies a confirmation round to the screened verdicts of the same mode.
// `round` holds the figures (summarize()) of the plan's CPUs; it is judged
// against plan.references only, and each suspect's suspected state is
// re-tested at `alpha`: confirmed, the state stays and the cause says so;
// else the state becomes transient. Either way the core's Confirmation
// records what the re-measurement found.
void apply_confirmation(ModeVerdicts& screened, std::vector<CoreFigures> round,
                        const ConfirmationPlan& plan, const Thresholds& thresholds, double alpha,
                        Mode mode = Mode::isolated);

}  // namespace corenoise
