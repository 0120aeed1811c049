#include "probe/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "probe/stats.h"

namespace corenoise {
namespace {

std::optional<double> median_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return stats::median(values);
}

// The fast decile of a sample's products: an actual timing
// (lower_quantile), robust to the detours that strike most timings on a
// noisy machine and to a lone outlier on the fast side.
constexpr double kIntrinsicQuantile = 0.1;

std::optional<double> spread_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  const double m = stats::median(values);
  return m > 0 ? stats::mad(values) / m : 0.0;
}

// The fast decile of each sample's own products, × reps: one intrinsic
// sample time per sample. The figure is their median, and their spread its
// uncertainty. (Not the fast decile of all products pooled: that follows
// the luckiest samples, and its error is not what the samples' spread
// says; measured in tests/unit/uncertainty_test.cpp.)
std::vector<double> per_sample_matmul(const CpuSamples& samples) {
  const auto& products = samples.matmul_product_seconds;
  const std::size_t n = samples.matmul_seconds.size();
  if (products.empty() || n == 0 || products.size() % n != 0) return samples.matmul_seconds;
  const std::size_t reps = products.size() / n;
  std::vector<double> out;
  out.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::span<const double> sample(products.data() + j * reps, reps);
    out.push_back(stats::lower_quantile(sample, kIntrinsicQuantile) * static_cast<double>(reps));
  }
  return out;
}

std::optional<double> ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

KindReference reference_of(const std::string& kind, const std::vector<const CoreFigures*>& cores) {
  KindReference ref;
  ref.kind = kind;
  ref.cores = cores.size();
  for (ProbeKind probe : kAllProbeKinds) {
    std::vector<double> values;
    std::vector<Uncertainty> errors;
    for (const CoreFigures* c : cores) {
      if (!c->figure[probe]) continue;
      values.push_back(*c->figure[probe]);
      errors.push_back(c->error[probe]);
    }
    ref.figure[probe] = median_of(values);
    if (!errors.empty()) ref.error[probe] = median_uncertainty(errors);
    if (probe != ProbeKind::detour || values.empty()) continue;
    ref.noise_floor = stats::lower_quantile(values, 0.25);
    // The floor is one core's figure: that core's uncertainty is the floor's.
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] == *ref.noise_floor) ref.noise_floor_error = errors[i];
    }
  }
  return ref;
}

// A kind with a single core in the round has no peer to show what every
// core of it loses alike (a one-CPU node, a daemon confined to one core):
// its own noise would be its floor, and nothing on it could ever be noisy.
// Its floor is then what the kernel cannot charge to anything on that CPU
// (interrupts, steal, below the kernel), so that the time other threads
// demonstrably took it from the probe -- the run-queue wait -- is its excess.
// An interrupt storm on a lone core goes unseen; the hypervisor's share,
// which slows every vCPU, is never held against it. Without the run-queue
// wait the floor stays the core's own noise, as before.
void use_lone_core_floor(KindReference& ref, const CoreFigures& core) {
  if (!core.detour || !core.detour->preempted_seconds || core.detour->window_seconds <= 0) return;
  const DetourResult& d = *core.detour;
  const double preempted = std::min(*d.preempted_seconds, d.total_seconds);
  ref.noise_floor = (d.total_seconds - preempted) / d.window_seconds;
  // The excess then carries the spread of the core's window noise shares
  // alone: the floor is no second measurement.
  ref.noise_floor_error = {Scale::linear, 0, core.error[ProbeKind::detour].df};
  // The typical core of such a node, which its slowdowns are against, is
  // the core without what other threads took: the floor too (else its
  // expected slowdown would be 1 whatever it lost, and no sweep would
  // drain it).
  ref.figure[ProbeKind::detour] = ref.noise_floor;
  ref.error[ProbeKind::detour] = ref.noise_floor_error;
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

// The tests, in the order they decide (ProbeDescriptor::test_order): the
// state each names, the figure and error it bounds, its threshold, the
// peer spread that widens it, and whether a design difference excuses it.
// One table, so that the verdict, the re-test, the peer spread and the
// widening read the same.
struct Test {
  ProbeKind kind;
  CoreState state;
  Tested tested;
  double Thresholds::*threshold;
  bool excused_by_design;
};

constexpr std::size_t kTestCount = [] {
  std::size_t n = 0;
  for (const ProbeDescriptor& d : kProbeDescriptors) n += d.tested != Tested::none ? 1 : 0;
  return n;
}();

constexpr std::array<Test, kTestCount> kTests = [] {
  std::array<Test, kTestCount> tests{};
  std::size_t n = 0;
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.tested != Tested::none)
      tests[n++] = {d.kind, d.drives, d.tested, d.threshold, d.excused_by_design};
  }
  std::sort(tests.begin(), tests.end(), [](const Test& a, const Test& b) {
    return descriptor(a.kind).test_order < descriptor(b.kind).test_order;
  });
  return tests;
}();

const Test* test_of(CoreState state) {
  for (const Test& t : kTests) {
    if (t.state == state) return &t;
  }
  return nullptr;
}

std::optional<double>& tested_figure(CoreFigures& c, const Test& t) {
  switch (t.tested) {
    case Tested::excess_over_floor:
      return c.excess_noise;
    case Tested::expected_slowdown:
      return c.expected_slowdown;
    default:
      return c.slowdown[t.kind];
  }
}
const std::optional<double>& tested_figure(const CoreFigures& c, const Test& t) {
  return tested_figure(const_cast<CoreFigures&>(c), t);
}
Uncertainty& tested_error(CoreFigures& c, const Test& t) {
  switch (t.tested) {
    case Tested::excess_over_floor:
      return c.excess_noise_error;
    case Tested::expected_slowdown:
      return c.expected_slowdown_error;
    default:
      return c.slowdown_error[t.kind];
  }
}

// The figures and their sampling errors against the reference.
void compare(CoreFigures& c, const KindReference& ref) {
  for (ProbeKind probe : kAllProbeKinds) {
    const Reference reference = ref.reference(probe);
    c.slowdown[probe] = reference.slowdown(c.figure[probe]);
    if (c.slowdown[probe])
      c.slowdown_error[probe] = reference.slowdown_error(*c.figure[probe], c.error[probe]);
  }
  const auto& noise = c.figure[ProbeKind::detour];
  if (noise && ref.noise_floor) {
    c.excess_noise = *noise - *ref.noise_floor;
    c.excess_noise_error = *noise == *ref.noise_floor
                               ? Uncertainty{Scale::linear, 0, c.error[ProbeKind::detour].df}
                               : combine(c.error[ProbeKind::detour], ref.noise_floor_error);
  }
  // Without matmul, the clock is the best stand-in for intrinsic speed.
  const auto& matmul = c.slowdown[ProbeKind::matmul];
  const auto& clock = c.slowdown[ProbeKind::clock];
  const auto& noise_factor = c.slowdown[ProbeKind::detour];
  const double intrinsic = matmul.value_or(clock.value_or(1));
  const Uncertainty intrinsic_error = matmul  ? c.slowdown_error[ProbeKind::matmul]
                                      : clock ? c.slowdown_error[ProbeKind::clock]
                                              : Uncertainty{Scale::log, 0, 1e9};
  c.expected_slowdown = intrinsic * noise_factor.value_or(1);
  c.expected_slowdown_error = noise_factor
                                  ? combine(intrinsic_error, c.slowdown_error[ProbeKind::detour])
                                  : intrinsic_error;
  if (clock) c.residual = intrinsic / *clock;
}

// The spread of one figure across the kind's cores beyond their sampling
// errors: √max(0, (1.4826·MAD)² − median(se)²). Robust: a minority of bad
// cores moves neither the MAD nor the median.
double peer_spread_of(const std::vector<const CoreFigures*>& cores, const Test& test) {
  std::vector<double> values, errors;
  for (const CoreFigures* c : cores) {
    const auto& v = tested_figure(*c, test);
    const Uncertainty& error = tested_error(const_cast<CoreFigures&>(*c), test);
    if (!v || !error.known()) continue;
    const bool log_scale = error.scale == Scale::log;
    if (log_scale && *v <= 0) continue;
    values.push_back(log_scale ? std::log(*v) : *v);
    errors.push_back(error.se);
  }
  if (values.size() < kMinCoresForPeerSpread) return 0;
  const double spread = 1.4826 * stats::mad(values);
  const double sampling = stats::median(errors);
  return std::sqrt(std::max(0.0, spread * spread - sampling * sampling));
}

KindReference::PeerSpread peer_spread(const std::vector<const CoreFigures*>& cores) {
  KindReference::PeerSpread s;
  if (cores.size() < kMinCoresForPeerSpread) return s;
  for (const Test& t : kTests) s.spread[t.kind] = peer_spread_of(cores, t);
  s.estimated = true;
  return s;
}

// Adds the peers' spread to the errors the tests read.
void widen(CoreFigures& c, const KindReference::PeerSpread& s) {
  for (const Test& t : kTests) {
    Uncertainty& u = tested_error(c, t);
    if (u.known()) u.se = std::hypot(u.se, s.spread[t.kind]);
  }
}

// The clock is the median of short dependent-add chains, and on a noisy
// core enough of them contain a detour to pull that median down at full
// frequency. When the noise test clears too and the noise is large enough
// to explain the deficit, the noise is the finding: calling it throttled
// would send the confirmation to re-measure the clock, which misleads the
// same way (a heavily noisy core came out "transient throttled"). Large
// enough: a median chain a fraction d slower means at least half the
// chains lost d of their time, so at least d/2 of the time overall.
// True where the state became noisy so.
bool prefer_noise_to_a_low_clock(CoreFigures& c, const Thresholds& t) {
  if (c.state != CoreState::throttled || !c.detour) return false;
  const double deficit = 1 - 1 / *c.slowdown[ProbeKind::clock];
  const auto bound = clears(c, CoreState::noisy, t, t.alpha);
  if (!bound || c.detour->noise_ratio() < deficit / 2) return false;
  c.state = CoreState::noisy;
  c.bound = bound;
  return true;
}

// The verdict: the first test whose lower bound clears its threshold,
// except that noise explains a low clock (above).
void decide(CoreFigures& c, const KindReference& ref, const Thresholds& t) {
  c.state = CoreState::ok;
  c.bound.reset();
  for (const Test& test : kTests) {
    if (const auto bound = clears(c, test.state, t, t.alpha)) {
      c.state = test.state;
      c.bound = bound;
      break;
    }
  }
  c.why = {};
  c.why.clock_read_low = prefer_noise_to_a_low_clock(c, t);
  if (c.state == CoreState::throttled) c.why.reference = ref.figure[ProbeKind::clock];
  c.cause = cause_of(c);
}

void summarize_matmul(CoreFigures& c, const CpuSamples& samples) {
  const auto& products = samples.matmul_product_seconds;
  const std::vector<double> intrinsic = per_sample_matmul(samples);
  const auto seconds = median_of(intrinsic);
  c.figure[ProbeKind::matmul] = seconds;
  c.error[ProbeKind::matmul] = log_uncertainty(intrinsic, kMedianEfficiency);
  c.spread[ProbeKind::matmul] = spread_of(products.empty() ? samples.matmul_seconds : products);
  c.work[ProbeKind::matmul] = samples.work[ProbeKind::matmul];
  c.matmul_sample_seconds = median_of(samples.matmul_seconds);
  if (seconds && *seconds > 0)
    c.matmul_flops_per_second = samples.work[ProbeKind::matmul].flops / *seconds;
}

// The median sample of a kernel the runner drives through its descriptor
// (or its work over the median sample time). The median, not a fast
// decile: a triad pass takes milliseconds, longer than most detours, and
// with seven samples a fast decile would be the fastest pass, whose error
// the samples' spread does not describe.
void summarize_kernel(CoreFigures& c, const CpuSamples& samples, const ProbeDescriptor& d) {
  const std::vector<double>& values = samples.samples[d.kind];
  c.work[d.kind] = samples.work[d.kind];
  const auto median = median_of(values);
  if (!median) return;
  if (d.summary == Summary::work_per_median_time) {
    if (!(*median > 0)) return;
    c.figure[d.kind] = samples.work[d.kind].*d.work / *median;
  } else {
    c.figure[d.kind] = median;
  }
  c.error[d.kind] = log_uncertainty(values, kMedianEfficiency);
  if (d.reports_spread) c.spread[d.kind] = spread_of(values);
}

void summarize_detours(CoreFigures& c, const CpuSamples& samples) {
  DetourResult merged;
  std::vector<double> lost, windows;
  for (const auto& window : samples.detours) {
    merged.merge(window);
    lost.push_back(window.total_seconds);
    windows.push_back(window.window_seconds);
  }
  c.detour = merged;
  c.figure[ProbeKind::detour] = merged.noise_ratio();
  c.error[ProbeKind::detour] = pooled_share_uncertainty(lost, windows);
  c.culprits = samples.culprits;
}

}  // namespace

CoreFigures summarize(const CpuSamples& samples, const std::string& kind) {
  CoreFigures c;
  c.cpu = samples.cpu;
  c.kind = kind;
  if (!samples.error.empty()) {
    c.state = CoreState::skipped;
    c.cause = skipped_cause(SkipReason::other, samples.error);
    return c;
  }
  if (!samples.matmul_seconds.empty()) summarize_matmul(c, samples);
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.summary != Summary::own) summarize_kernel(c, samples, d);
  }
  if (!samples.detours.empty()) summarize_detours(c, samples);
  const bool measured = std::any_of(c.figure.items.begin(), c.figure.items.end(),
                                    [](const auto& figure) { return figure.has_value(); });
  c.state = measured ? CoreState::ok : CoreState::skipped;
  if (!measured) c.cause = skipped_cause(SkipReason::no_samples);
  return c;
}

std::optional<double> test_figure(const CoreFigures& c, CoreState state) {
  const Test* test = test_of(state);
  if (test == nullptr || !tested_figure(c, *test)) return std::nullopt;
  // Excuses a core slower by design; never accuses a favoured one (with
  // turbo off it runs at everyone's clock).
  const double design = test->excused_by_design ? std::max(1.0, c.design_ratio.value_or(1)) : 1;
  return *tested_figure(c, *test) / design;
}

std::optional<double> clears(const CoreFigures& c, CoreState state, const Thresholds& t,
                             double alpha) {
  const auto figure = test_figure(c, state);
  if (!figure) return std::nullopt;
  const Test& test = *test_of(state);
  const auto bound = lower_bound(*figure, tested_error(const_cast<CoreFigures&>(c), test), alpha);
  if (!bound || *bound < t.*test.threshold) return std::nullopt;
  return bound;
}

ModeVerdicts judge(std::vector<CoreFigures> cores, const Thresholds& thresholds, Mode mode,
                   const std::vector<unsigned>* reference_cpus,
                   const std::vector<KindReference>* peers) {
  set_design_ratios(cores, mode);
  const auto is_reference = [&](const CoreFigures& c) {
    if (c.state == CoreState::skipped) return false;
    if (reference_cpus == nullptr) return true;
    return std::find(reference_cpus->begin(), reference_cpus->end(), c.cpu) !=
           reference_cpus->end();
  };
  std::map<std::string, std::vector<const CoreFigures*>> by_kind;
  for (const auto& c : cores) {
    if (is_reference(c)) by_kind[c.kind].push_back(&c);
  }
  ModeVerdicts verdicts;
  for (const auto& [kind, members] : by_kind) {
    verdicts.references.push_back(reference_of(kind, members));
    const auto judged = std::count_if(cores.begin(), cores.end(), [&](const CoreFigures& c) {
      return c.kind == kind && c.state != CoreState::skipped;
    });
    if (members.size() == 1 && judged == 1)
      use_lone_core_floor(verdicts.references.back(), *members[0]);
  }
  const auto reference_for = [&](const CoreFigures& c) -> KindReference* {
    for (auto& ref : verdicts.references) {
      if (ref.kind == c.kind) return &ref;
    }
    return nullptr;
  };
  for (auto& c : cores) {
    if (c.state == CoreState::skipped) continue;
    if (KindReference* ref = reference_for(c)) compare(c, *ref);
  }
  // The peers' spread, from the compared figures of each kind's references.
  for (auto& ref : verdicts.references) {
    ref.peer_spread = peer_spread(by_kind[ref.kind]);
    if (ref.peer_spread.estimated || peers == nullptr) continue;
    for (const auto& other : *peers) {
      if (other.kind == ref.kind) ref.peer_spread = other.peer_spread;
    }
  }
  for (auto& c : cores) {
    if (c.state == CoreState::skipped) continue;
    if (KindReference* ref = reference_for(c)) {
      widen(c, ref->peer_spread);
      decide(c, *ref, thresholds);
    }
  }
  verdicts.cores = std::move(cores);
  return verdicts;
}

}  // namespace corenoise
