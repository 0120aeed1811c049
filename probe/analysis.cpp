#include "probe/analysis.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "probe/stats.h"

namespace corenoise {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

std::optional<double> median_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return stats::median(values);
}

// The fast decile: an actual timing (lower_quantile), robust to the
// detours that strike most timings on a noisy machine and to a lone
// outlier on the fast side.
constexpr double kIntrinsicQuantile = 0.1;

std::optional<double> fast_decile_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return stats::lower_quantile(values, kIntrinsicQuantile);
}

std::optional<double> spread_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  const double m = stats::median(values);
  return m > 0 ? stats::mad(values) / m : 0.0;
}

std::optional<double> ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

// Where the lost time went, as far as the kernel can tell: time taken by
// other threads and steal are measured in seconds; interrupts only counted;
// the rest happened below the guest kernel (hypervisor, SMIs).
std::string attribute(const DetourResult& d) {
  const double lost = std::max(d.total_seconds, 1e-12);
  const double preempted = std::min(d.preempted_seconds.value_or(0), lost);
  const double steal = std::min(d.steal_seconds.value_or(0), lost - preempted);
  const double rest = lost - preempted - steal;
  const unsigned long long irqs = d.interrupts.value_or(0) + d.softirqs.value_or(0);
  std::string text;
  if (preempted > 0) {
    text += format("%.0f%% preempted by other threads (%llu times)", 100 * preempted / lost,
                   static_cast<unsigned long long>(d.preemptions));
  }
  if (steal > 0) text += format("%s%.0f%% steal", text.empty() ? "" : ", ", 100 * steal / lost);
  if (rest > 0.005 * lost) {
    text += format("%s%.0f%% %s", text.empty() ? "" : ", ", 100 * rest / lost,
                   irqs > 0 ? "in interrupts, softirqs or below the kernel"
                            : "below the kernel (hypervisor or SMI)");
  }
  if (irqs > 0) text += format(" [%llu interrupts and softirqs]", irqs);
  return text;
}

KindReference reference_of(const std::string& kind, const std::vector<const CoreFigures*>& cores) {
  KindReference ref;
  ref.kind = kind;
  ref.cores = cores.size();
  std::vector<double> matmul, clock, noise, stream;
  for (const CoreFigures* c : cores) {
    if (c->matmul_seconds) matmul.push_back(*c->matmul_seconds);
    if (c->clock_hertz) clock.push_back(*c->clock_hertz);
    if (c->detour) noise.push_back(c->detour->noise_ratio());
    if (c->stream_bytes_per_second) stream.push_back(*c->stream_bytes_per_second);
  }
  ref.matmul_seconds = median_of(matmul);
  ref.clock_hertz = median_of(clock);
  ref.noise_ratio = median_of(noise);
  if (!noise.empty()) ref.noise_floor = stats::lower_quantile(noise, 0.25);
  ref.stream_bytes_per_second = median_of(stream);
  return ref;
}

// Cores of one kind that differ by design (favoured / preferred cores) run
// faster alone: design_ratio says by how much a core is expected to be
// slower than the kind's median, so that it is not read as a fault. Only
// isolated rounds: together, every core runs at the all-core turbo.
void set_design_ratios(std::vector<CoreFigures>& cores, Mode mode) {
  if (mode != Mode::isolated) return;
  std::map<std::string, std::vector<double>> by_kind;
  for (const auto& c : cores) {
    if (c.state != CoreState::skipped && c.top_perf) by_kind[c.kind].push_back(*c.top_perf);
  }
  for (auto& c : cores) {
    if (c.state == CoreState::skipped || !c.top_perf) continue;
    c.design_ratio = ratio(median_of(by_kind[c.kind]), c.top_perf);
  }
}

void decide(CoreFigures& c, const KindReference& ref, const Thresholds& t) {
  c.matmul_slowdown = ratio(c.matmul_seconds, ref.matmul_seconds);
  c.clock_ratio = ratio(ref.clock_hertz, c.clock_hertz);
  c.stream_slowdown = ratio(ref.stream_bytes_per_second, c.stream_bytes_per_second);
  const double noise = c.detour ? c.detour->noise_ratio() : 0;
  if (c.detour && ref.noise_floor) c.excess_noise = noise - *ref.noise_floor;
  if (c.detour && ref.noise_ratio && noise < 1) {
    c.noise_factor = (1 - *ref.noise_ratio) / (1 - noise);
  }
  // Without matmul, the clock is the best stand-in for intrinsic speed.
  const double intrinsic = c.matmul_slowdown.value_or(c.clock_ratio.value_or(1));
  c.expected_slowdown = intrinsic * c.noise_factor.value_or(1);
  if (c.clock_ratio) c.residual = intrinsic / *c.clock_ratio;
  // Excuses a core slower by design; never accuses a favoured one (with
  // turbo off it runs at everyone's clock).
  const double design = std::max(1.0, c.design_ratio.value_or(1));

  if (c.clock_ratio && *c.clock_ratio / design >= t.throttled_clock_ratio) {
    c.state = CoreState::throttled;
    c.cause =
        format("clock %.2f GHz is %.1f%% below the %s reference %.2f GHz", *c.clock_hertz / 1e9,
               (1 - 1 / *c.clock_ratio) * 100, c.kind.c_str(), *ref.clock_hertz / 1e9);
  } else if (c.excess_noise && *c.excess_noise >= t.noisy_excess_noise) {
    c.state = CoreState::noisy;
    c.cause = format(
                  "loses %.1f%% of its time to %llu detours (max %.0f us), %.1f points above "
                  "the node's floor: ",
                  noise * 100, static_cast<unsigned long long>(c.detour->count),
                  c.detour->max_seconds * 1e6, *c.excess_noise * 100) +
              attribute(*c.detour);
  } else if (c.stream_slowdown && *c.stream_slowdown >= t.contended_stream_ratio) {
    c.state = CoreState::contended;
    c.cause = format(
        "memory bandwidth %.1f GB/s is %.1f%% below the reference with normal clock "
        "and noise",
        *c.stream_bytes_per_second / 1e9, (1 - 1 / *c.stream_slowdown) * 100);
  } else if (c.expected_slowdown && *c.expected_slowdown / design >= t.slow_ratio) {
    c.state = CoreState::slow;
    c.cause = format("matmul %.1f%% slower than the reference; clock, noise and memory are normal",
                     (*c.expected_slowdown - 1) * 100);
  } else {
    c.state = CoreState::ok;
    c.cause = "";
  }
}

}  // namespace

std::string_view to_string(CoreState state) {
  switch (state) {
    case CoreState::ok:
      return "ok";
    case CoreState::transient:
      return "transient";
    case CoreState::noisy:
      return "noisy";
    case CoreState::throttled:
      return "throttled";
    case CoreState::contended:
      return "contended";
    case CoreState::slow:
      return "slow";
    case CoreState::skipped:
      return "skipped";
  }
  return "?";
}

CoreFigures summarize(const CpuSamples& samples, const std::string& kind) {
  CoreFigures c;
  c.cpu = samples.cpu;
  c.kind = kind;
  if (!samples.error.empty()) {
    c.state = CoreState::skipped;
    c.cause = samples.error;
    return c;
  }
  if (!samples.matmul_seconds.empty()) {
    const auto& products = samples.matmul_product_seconds;
    const double reps = static_cast<double>(products.size() / samples.matmul_seconds.size());
    c.matmul_seconds = products.empty() ? *fast_decile_of(samples.matmul_seconds)
                                        : *fast_decile_of(products) * reps;
    c.matmul_spread = spread_of(products.empty() ? samples.matmul_seconds : products);
    c.matmul_sample_seconds = median_of(samples.matmul_seconds);
  }
  if (c.matmul_seconds && *c.matmul_seconds > 0) {
    c.matmul_flops_per_second = samples.matmul_work.flops / *c.matmul_seconds;
  }
  c.clock_hertz = median_of(samples.clock_hertz);
  c.clock_spread = spread_of(samples.clock_hertz);
  if (!samples.detours.empty()) {
    DetourResult merged;
    for (const auto& window : samples.detours) merged.merge(window);
    c.detour = merged;
  }
  if (const auto t = fast_decile_of(samples.stream_seconds); t && *t > 0) {
    c.stream_bytes_per_second = samples.stream_work.bytes / *t;
  }
  const bool measured = c.matmul_seconds || c.clock_hertz || c.detour || c.stream_bytes_per_second;
  c.state = measured ? CoreState::ok : CoreState::skipped;
  if (!measured) c.cause = "no samples (round cancelled)";
  return c;
}

ModeVerdicts judge(std::vector<CoreFigures> cores, const Thresholds& thresholds, Mode mode) {
  set_design_ratios(cores, mode);
  std::map<std::string, std::vector<const CoreFigures*>> by_kind;
  for (const auto& c : cores) {
    if (c.state != CoreState::skipped) by_kind[c.kind].push_back(&c);
  }
  ModeVerdicts verdicts;
  for (const auto& [kind, members] : by_kind)
    verdicts.references.push_back(reference_of(kind, members));
  for (auto& c : cores) {
    if (c.state == CoreState::skipped) continue;
    for (const auto& ref : verdicts.references) {
      if (ref.kind == c.kind) decide(c, ref, thresholds);
    }
  }
  verdicts.cores = std::move(cores);
  return verdicts;
}

}  // namespace corenoise
