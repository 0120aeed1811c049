#include "probe/verdict_text.h"

#include <algorithm>

#include "probe/trace/culprit_names.h"
#include "probe/units.h"

namespace corenoise {
namespace {

// "12%": a share of the lost time, given in percent, to the percent.
std::string percent_of_lost(double percent) { return fixed(percent, 0) + "%"; }

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
    text += percent_of_lost(100 * preempted / lost) + " preempted by other threads (" +
            std::to_string(d.preemptions) + " times)";
  }
  if (steal > 0)
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * steal / lost) + " steal";
  if (rest > 0.005 * lost) {
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * rest / lost) +
            (irqs > 0 ? " in interrupts, softirqs or below the kernel"
                      : " below the kernel (hypervisor or SMI)");
  }
  if (irqs > 0) text += " [" + std::to_string(irqs) + " interrupts and softirqs]";
  return text;
}

// The same from the tracer: each culprit by name, its share of the lost
// time, the largest first. The time the trace did not match (more detours
// in a window than the runner kept) is said, not spread over the others.
std::string attribute(const DetourResult& d, const trace::Attribution& culprits) {
  const double lost = std::max(d.total_seconds, 1e-12);
  constexpr std::size_t kNamed = 3;
  std::string text;
  double named = 0;
  for (std::size_t i = 0; i < culprits.culprits.size() && i < kNamed; ++i) {
    const trace::Culprit& c = culprits.culprits[i];
    const double share = c.seconds / lost;
    if (share < 0.005) break;
    named += c.seconds;
    const bool idle = c.kind == trace::CulpritKind::task && c.id == 0;  // nobody preempted it
    const char* verb = c.kind == trace::CulpritKind::task && !idle ? "preempted by "
                       : c.kind == trace::CulpritKind::irq ||
                               c.kind == trace::CulpritKind::softirq ||
                               c.kind == trace::CulpritKind::work
                           ? "in "
                           : "";
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * share) + " " + verb +
            trace::describe(c) + " (" + std::to_string(c.detours) + " times)";
  }
  const double others = culprits.detour_seconds - named;
  if (others > 0.005 * lost) text += ", " + percent_of_lost(100 * others / lost) + " others";
  const double unmatched = lost - culprits.detour_seconds;
  if (unmatched > 0.005 * lost)
    text += ", " + percent_of_lost(100 * unmatched / lost) + " not matched";
  if (culprits.overran) text += " (the tracer lost events)";
  return text;
}

// " (95% interval 2.1-4.0%)" for a ratio whose excess is shown in percent,
// " (95% interval 2.1-4.0 points)" for a difference of shares, "" where
// the uncertainty is not known.
std::string interval_text(double value, const Uncertainty& u, bool as_slowdown) {
  const auto i = interval(value, u, kReportedConfidence);
  if (!i) return "";
  if (as_slowdown)
    return " (95% interval " + fixed((i->lo - 1) * 100, 1) + "-" + fixed((i->hi - 1) * 100, 1) +
           "%)";
  return " (95% interval " + fixed(i->lo * 100, 1) + "-" + fixed(i->hi * 100, 1) + " points)";
}

std::string throttled_text(const CoreFigures& c) {
  const double ratio = *c.slowdown[ProbeKind::clock];
  return "clock " + fixed(*c.figure[ProbeKind::clock] / 1e9, 2) + " GHz is " +
         fixed((1 - 1 / ratio) * 100, 1) + "% below the " + c.kind + " reference " +
         fixed(*c.why.reference / 1e9, 2) + " GHz" +
         interval_text(ratio, c.slowdown_error[ProbeKind::clock], true);
}

std::string noisy_text(const CoreFigures& c) {
  const DetourResult& d = *c.detour;
  std::string text = "loses " + fixed(d.noise_ratio() * 100, 1) + "% of its time to " +
                     std::to_string(d.count) + " detours (max " + fixed(d.max_seconds * 1e6, 0) +
                     " us), " + fixed(*c.excess_noise * 100, 1) + " points above the node's floor" +
                     interval_text(*c.excess_noise, c.excess_noise_error, false) + ": " +
                     lost_time_text(d, c.culprits);
  if (c.why.clock_read_low) {
    text += "; its clock reads " + fixed((1 - 1 / *c.slowdown[ProbeKind::clock]) * 100, 1) +
            "% low, as detours this large make it";
  }
  return text;
}

std::string contended_text(const CoreFigures& c) {
  const double ratio = *c.slowdown[ProbeKind::stream];
  return "memory bandwidth " + fixed(*c.figure[ProbeKind::stream] / 1e9, 1) + " GB/s is " +
         fixed((1 - 1 / ratio) * 100, 1) + "% below the reference with normal clock and noise" +
         interval_text(ratio, c.slowdown_error[ProbeKind::stream], true);
}

std::string slow_text(const CoreFigures& c) {
  return "matmul " + fixed((*c.expected_slowdown - 1) * 100, 1) + "% slower than the reference" +
         interval_text(*c.expected_slowdown, c.expected_slowdown_error, true) +
         "; clock, noise and memory are normal";
}

}  // namespace

std::string lost_time_text(const DetourResult& detours,
                           const std::optional<trace::Attribution>& culprits) {
  return culprits ? attribute(detours, *culprits) : attribute(detours);
}

std::string cause_text(const CoreFigures& c) {
  switch (c.state) {
    case CoreState::throttled:
      return throttled_text(c);
    case CoreState::noisy:
      return noisy_text(c);
    case CoreState::contended:
      return contended_text(c);
    case CoreState::slow:
      return slow_text(c);
    default:
      return "";
  }
}

}  // namespace corenoise
