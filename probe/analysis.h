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

namespace corenoise {

// Ordered from healthy to worst cause; `skipped` means not measured.
// `transient`: looked unhealthy once, but the re-measurement (probe, sweep)
// or the core's recent rounds (daemon) did not bear it out; its figures are
// kept, and it is not unhealthy (docs/verdicts.md).
enum class CoreState { ok, transient, noisy, throttled, contended, slow, skipped };
std::string_view to_string(CoreState state);
inline constexpr CoreState kAllCoreStates[] = {
    CoreState::ok,        CoreState::transient, CoreState::noisy, CoreState::throttled,
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
  std::optional<DetourResult> detour;             // all windows merged
  std::optional<double> stream_bytes_per_second;  // from the fast-decile sample time
  // Filled by judge():
  std::optional<double> matmul_slowdown;  // matmul time / reference
  std::optional<double> clock_ratio;      // reference clock / clock
  std::optional<double> stream_slowdown;  // reference bandwidth / bandwidth
  std::optional<double> excess_noise;     // noise ratio − the kind's noise floor
  std::optional<double> noise_factor;
  std::optional<double> residual;
  std::optional<double> expected_slowdown;
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
};

struct ModeVerdicts {
  std::vector<CoreFigures> cores;
  std::vector<KindReference> references;
};

// Reduces samples; `skip_reason` non-empty (or samples.error) gives a
// skipped core with that cause.
CoreFigures summarize(const CpuSamples& samples, const std::string& kind);
// Sets references, ratios and verdicts for every core of one mode (the
// mode decides whether design_ratio applies).
ModeVerdicts judge(std::vector<CoreFigures> cores, const Thresholds& thresholds,
                   Mode mode = Mode::isolated);

}  // namespace corenoise
