// From raw samples to verdicts. Pure: no I/O, no clock.
//
// summarize() reduces one CPU's samples to robust figures; judge() compares
// each core with the reference core of its kind (the median of that kind's
// cores on this node: hybrid P and E cores are never compared with each
// other) and draws the verdict:
//
//   expected_slowdown = clock_ratio × noise_factor × residual
//     clock_ratio  = reference clock / core clock        (frequency)
//     noise_factor = (1 − reference noise) / (1 − noise)  (lost time)
//     residual     = what neither explains               (contention, …)
//
// Speed and lost time are measured apart. The matmul, stream and clock
// figures are each core's *intrinsic* speed: the fast decile of many short
// timings (one matmul product is tens of µs), because interruptions only
// ever add time, and with a noisy hypervisor most timings hold a detour, so
// even a median is not clean. Lost time is the detour probe's, over long
// windows. expected_slowdown = matmul slowdown × noise_factor is then what a
// long fixed-work step on that core would see.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/cause.h"
#include "probe/detour_probe.h"
#include "probe/probe_kinds.h"
#include "probe/runner.h"
#include "probe/settings.h"
#include "probe/uncertainty.h"

namespace corenoise {

// One CPU's figures in one mode, in base units. Optional fields are empty
// for probes not run.
struct CoreFigures {
  unsigned cpu = 0;
  std::string kind;
  // The PU's designed top performance (ProcessingUnit::top_perf), an input.
  std::optional<double> top_perf;
  // Each probe kind's figure (its descriptor's figure_name, in base units;
  // matmul: one sample uninterrupted, the fast-decile product × reps;
  // clock: the median sample, each the fastest of its chunks; detour: the
  // share of time lost over all windows; stream: from the median triad
  // time), empty for probes not run, and how sure it is, from the round's
  // own samples (uncertainty.h): the spread of the per-sample figures (each
  // sample's fast-decile product, clock, triad time; each detour window's
  // noise share), on the kind's scale.
  PerKind<std::optional<double>> figure;
  PerKind<Uncertainty> error = unknown_errors();
  PerKind<std::optional<double>> spread;          // MAD / median of the samples (reports_spread)
  PerKind<KernelWork> work;                       // of one sample's run
  std::optional<double> matmul_flops_per_second;  // the sample's FLOP / matmul seconds
  std::optional<double> matmul_sample_seconds;    // median measured sample, noise included
  std::optional<DetourResult> detour;             // all windows merged
  // Where the CPU was traced: what the detours' time was charged to
  // (probe/trace/culprit_matcher.h), in seconds.
  std::optional<trace::Attribution> culprits;
  // Filled by judge(): each figure against the kind's reference
  // (Reference::slowdown: matmul time / reference, reference clock / clock,
  // the noise factor, reference bandwidth / bandwidth) and its uncertainty,
  // the core's and the reference's combined (log scale).
  PerKind<std::optional<double>> slowdown;
  PerKind<Uncertainty> slowdown_error;
  std::optional<double> excess_noise;  // noise ratio − the kind's noise floor
  std::optional<double> residual;
  std::optional<double> expected_slowdown;
  Uncertainty excess_noise_error{Scale::linear}, expected_slowdown_error;
  // Isolated rounds only: median top_perf of the kind's measured cores /
  // this core's top_perf. > 1 for a core slower by design (not a favoured
  // core of Turbo Boost Max 3.0 / CPPC), < 1 for a favoured one, 1 where
  // the kind is all alike; empty where unknown and in concurrent rounds
  // (all-core turbo is the same for all). The throttled and slow tests
  // divide clock_ratio and expected_slowdown by max(1, design_ratio); the
  // ratios themselves stay raw.
  std::optional<double> design_ratio;
  CoreState state = CoreState::skipped;
  // Why this state, as data beyond the figures above that the sentence
  // cites (probe/verdict_text.h makes it): the reference clock a throttled
  // core is below; whether a noisy core's clock also read low (its detours
  // pulled the clock's median down).
  struct Why {
    std::optional<double> reference;
    bool clock_read_low = false;
  } why;
  // Why this state (or why skipped) as data, cause_of(*this) when judged;
  // the confirmation, the daemon's thermal counters and its persistence
  // add to it. probe/verdict_text.h makes its sentence.
  Cause cause;
  // For an unhealthy state: the one-sided lower confidence bound of the
  // figure that decided it (at the level judge() was given), which cleared
  // the threshold.
  std::optional<double> bound;
  // Set by confirm() on a core that was a suspect: what its re-measurement
  // found. `state` is then the suspected state if confirmed, else transient.
  struct Confirmation {
    CoreState suspected = CoreState::ok;  // the round's verdict (its cause: `cause`)
    bool confirmed = false;
    int rounds = 0;    // confirmation rounds it took part in (passed all but maybe the last)
    double alpha = 0;  // level of the re-test
    std::optional<double> figure;           // the re-measured figure of that test
    std::optional<double> bound;            // its lower bound at alpha
    std::optional<unsigned> reference_cpu;  // its reference core in the confirmation
  };
  std::optional<Confirmation> confirmation;
};

// The reference core of one CPU kind in one mode: medians over the kind's
// measured cores.
struct KindReference {
  std::string kind;
  std::size_t cores = 0;
  // Each kind's median figure (the detour's: noise ratio, the typical core,
  // for slowdowns) and the uncertainty of the median (median_uncertainty
  // of the members').
  PerKind<std::optional<double>> figure;
  PerKind<Uncertainty> error = unknown_errors();
  // The quietest quarter's upper bound (lower_quantile 0.25): noise only
  // ever adds, so the floor that every core could reach is a low quantile.
  // In a VM it includes what the hypervisor takes from every vCPU alike.
  std::optional<double> noise_floor;
  Uncertainty noise_floor_error{Scale::linear};  // the floor core's own
  Reference reference(ProbeKind probe) const {
    return {figure[probe], descriptor(probe).direction, error[probe]};
  }
  // How far this kind's healthy cores differ from one another in this round
  // beyond what their own samples explain (Efron's empirical null): the
  // robust spread of each tested figure across the kind's cores, less their
  // median sampling error in quadrature. On the log scale for the ratios,
  // linear for the excess noise. Estimated where the kind has at least
  // kMinCoresForPeerSpread reference cores, else taken from the round a
  // confirmation re-measures, else 0. Every test's error includes it.
  // Indexed by the kind whose test it widens (ProbeDescriptor::tested_name).
  struct PeerSpread {
    PerKind<double> spread;
    bool estimated = false;
  } peer_spread;
};

// Fewer cores of a kind than this, and their spread says too little.
inline constexpr std::size_t kMinCoresForPeerSpread = 8;

struct ModeVerdicts {
  std::vector<CoreFigures> cores;
  std::vector<KindReference> references;
};

// Reduces samples; `skip_reason` non-empty (or samples.error) gives a
// skipped core with that cause.
CoreFigures summarize(const CpuSamples& samples, const std::string& kind);

// Sets references, ratios, their uncertainties and verdicts for every core
// of one mode, each test at level thresholds.alpha (docs/verdicts.md);
// design ratios in isolated rounds only. If `reference_cpus` is given, each
// kind's reference is the median of only those CPUs (a confirmation round's
// reference cores), else of every measured core.
// `peers`, if given (the screened round's references), supplies the peer
// spread of kinds with too few reference cores to estimate their own.
ModeVerdicts judge(std::vector<CoreFigures> cores, const Thresholds& thresholds,
                   Mode mode = Mode::isolated,
                   const std::vector<unsigned>* reference_cpus = nullptr,
                   const std::vector<KindReference>* peers = nullptr);

// The test that decides `state` (the kind whose descriptor drives it:
// throttled: clock ratio; noisy: excess noise; contended: stream slowdown;
// slow: expected slowdown) on judged
// figures: its lower bound at alpha if that clears the threshold, else
// nullopt. Also nullopt for states that are not unhealthy.
std::optional<double> clears(const CoreFigures& c, CoreState state, const Thresholds& thresholds,
                             double alpha);
// The figure that test reads (nullopt if not measured): the clock ratio and
// expected slowdown divided by max(1, design_ratio).
std::optional<double> test_figure(const CoreFigures& c, CoreState state);

}  // namespace corenoise
