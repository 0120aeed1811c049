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

#include "probe/detour_probe.h"
#include "probe/runner.h"
#include "probe/settings.h"
#include "probe/uncertainty.h"

namespace corenoise {

// Ordered from healthy to worst cause; `skipped` means not measured.
// `transient`: looked unhealthy once, but the re-measurement (probe, sweep)
// or the core's recent rounds (daemon) did not bear it out; its figures are
// kept, and it is not unhealthy (docs/verdicts.md).
enum class CoreState { ok, transient, noisy, throttled, contended, slow, skipped };
std::string_view to_string(CoreState state);
inline constexpr CoreState kAllCoreStates[] = {
    CoreState::ok,        CoreState::transient, CoreState::noisy,  CoreState::throttled,
    CoreState::contended, CoreState::slow,      CoreState::skipped};
// noisy, throttled, contended or slow: what sets exit 2, drains and alerts.
constexpr bool is_unhealthy(CoreState state) {
  return state != CoreState::ok && state != CoreState::transient && state != CoreState::skipped;
}

// One CPU's figures in one mode, in base units. Optional fields are empty
// for probes not run.
struct CoreFigures {
  unsigned cpu = 0;
  std::string kind;
  // The PU's designed top performance (ProcessingUnit::top_perf), an input.
  std::optional<double> top_perf;
  std::optional<double> matmul_seconds;  // one sample, uninterrupted: fast-decile product × reps
  std::optional<double> matmul_flops_per_second;  // the sample's FLOP / matmul_seconds
  std::optional<double> matmul_spread;            // MAD / median of the product times
  std::optional<double> matmul_sample_seconds;    // median measured sample, noise included
  std::optional<double> clock_hertz;  // median of samples (each the fastest of its chunks)
  std::optional<double> clock_spread;
  std::optional<DetourResult> detour;  // all windows merged
  // Where the CPU was traced: what the detours' time was charged to
  // (probe/trace/culprit_matcher.h), in seconds.
  std::optional<trace::Attribution> culprits;
  std::optional<double> stream_bytes_per_second;  // from the fast-decile sample time
  // How sure each figure is, from the round's own samples (uncertainty.h):
  // the spread of the per-sample figures (each sample's fast-decile
  // product, clock, triad time; each detour window's noise share).
  Uncertainty matmul_error;                // of matmul_seconds, log scale
  Uncertainty clock_error;                 // of clock_hertz, log scale
  Uncertainty noise_error{Scale::linear};  // of detour->noise_ratio(), linear
  Uncertainty stream_error;                // of stream_bytes_per_second, log scale
  // Filled by judge():
  std::optional<double> matmul_slowdown;  // matmul time / reference
  std::optional<double> clock_ratio;      // reference clock / clock
  std::optional<double> stream_slowdown;  // reference bandwidth / bandwidth
  std::optional<double> excess_noise;     // noise ratio − the kind's noise floor
  std::optional<double> noise_factor;
  std::optional<double> residual;
  std::optional<double> expected_slowdown;
  // The uncertainties of the judged figures: the core's and the
  // reference's combined (log scale, excess_noise linear).
  Uncertainty matmul_slowdown_error, clock_ratio_error, stream_slowdown_error,
      excess_noise_error{Scale::linear}, noise_factor_error, expected_slowdown_error;
  // Isolated rounds only: median top_perf of the kind's measured cores /
  // this core's top_perf. > 1 for a core slower by design (not a favoured
  // core of Turbo Boost Max 3.0 / CPPC), < 1 for a favoured one, 1 where
  // the kind is all alike; empty where unknown and in concurrent rounds
  // (all-core turbo is the same for all). The throttled and slow tests
  // divide clock_ratio and expected_slowdown by max(1, design_ratio); the
  // ratios themselves stay raw.
  std::optional<double> design_ratio;
  CoreState state = CoreState::skipped;
  std::string cause;  // one line: why this state (or why skipped)
  // For an unhealthy state: the one-sided lower confidence bound of the
  // figure that decided it (at the level judge() was given), which cleared
  // the threshold.
  std::optional<double> bound;
  // Set by confirm() on a core that was a suspect: what its re-measurement
  // found. `state` is then the suspected state if confirmed, else transient.
  struct Confirmation {
    CoreState suspected = CoreState::ok;  // the round's verdict
    std::string suspected_cause;          // the round's cause
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
  std::optional<double> matmul_seconds;
  std::optional<double> clock_hertz;
  std::optional<double> noise_ratio;  // median: the typical core, for slowdowns
  // The quietest quarter's upper bound (lower_quantile 0.25): noise only
  // ever adds, so the floor that every core could reach is a low quantile.
  // In a VM it includes what the hypervisor takes from every vCPU alike.
  std::optional<double> noise_floor;
  std::optional<double> stream_bytes_per_second;
  // Uncertainties of the medians (median_uncertainty of the members').
  Uncertainty matmul_error, clock_error, noise_error{Scale::linear}, stream_error;
  Uncertainty noise_floor_error{Scale::linear};  // the floor core's own
  // How far this kind's healthy cores differ from one another in this round
  // beyond what their own samples explain (Efron's empirical null): the
  // robust spread of each tested figure across the kind's cores, less their
  // median sampling error in quadrature. On the log scale for the ratios,
  // linear for the excess noise. Estimated where the kind has at least
  // kMinCoresForPeerSpread reference cores, else taken from the round a
  // confirmation re-measures, else 0. Every test's error includes it.
  struct PeerSpread {
    double clock_ratio = 0, excess_noise = 0, stream_slowdown = 0, expected_slowdown = 0;
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

// The test that decides `state` (throttled: clock ratio; noisy: excess
// noise; contended: stream slowdown; slow: expected slowdown) on judged
// figures: its lower bound at alpha if that clears the threshold, else
// nullopt. Also nullopt for states that are not unhealthy.
std::optional<double> clears(const CoreFigures& c, CoreState state, const Thresholds& thresholds,
                             double alpha);
// The figure that test reads (nullopt if not measured): the clock ratio and
// expected slowdown divided by max(1, design_ratio).
std::optional<double> test_figure(const CoreFigures& c, CoreState state);

}  // namespace corenoise
