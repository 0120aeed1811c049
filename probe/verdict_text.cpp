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
std::string attribute(const LostTime& d) {
  const double lost = std::max(d.total_seconds, 1e-12);
  const double preempted = std::min(d.preempted_seconds.value_or(0), lost);
  const double steal = std::min(d.steal_seconds.value_or(0), lost - preempted);
  const double rest = lost - preempted - steal;
  std::string text;
  if (preempted > 0) {
    text += percent_of_lost(100 * preempted / lost) + " preempted by other threads (" +
            std::to_string(d.preemptions) + " times)";
  }
  if (steal > 0)
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * steal / lost) + " steal";
  if (rest > 0.005 * lost) {
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * rest / lost) +
            (d.interrupts > 0 ? " in interrupts, softirqs or below the kernel"
                              : " below the kernel (hypervisor or SMI)");
  }
  if (d.interrupts > 0) text += " [" + std::to_string(d.interrupts) + " interrupts and softirqs]";
  return text;
}

// The same from the tracer: each named culprit, its share of the lost
// time, the largest first. The time the trace did not match (more detours
// in a window than the runner kept) is said, not spread over the others.
std::string attribute(const LostTime& d, const LostTime::Traced& traced) {
  const double lost = std::max(d.total_seconds, 1e-12);
  std::string text;
  double named = 0;
  for (const trace::Culprit& c : traced.named) {
    named += c.seconds;
    const bool idle = c.kind == trace::CulpritKind::task && c.id == 0;  // nobody preempted it
    const char* verb = c.kind == trace::CulpritKind::task && !idle ? "preempted by "
                       : c.kind == trace::CulpritKind::irq ||
                               c.kind == trace::CulpritKind::softirq ||
                               c.kind == trace::CulpritKind::work
                           ? "in "
                           : "";
    text += (text.empty() ? "" : ", ") + percent_of_lost(100 * c.seconds / lost) + " " + verb +
            trace::describe(c) + " (" + std::to_string(c.detours) + " times)";
  }
  const double others = traced.matched_seconds - named;
  if (others > 0.005 * lost) text += ", " + percent_of_lost(100 * others / lost) + " others";
  const double unmatched = lost - traced.matched_seconds;
  if (unmatched > 0.005 * lost)
    text += ", " + percent_of_lost(100 * unmatched / lost) + " not matched";
  if (traced.overran) text += " (the tracer lost events)";
  return text;
}

// The 95 % interval of the cause's ratio as its sentence reads the ratio:
// " (95% interval 2.1-4.0%)" for a slowdown read as its excess, for a
// figure read as how far below its reference it is, " (95% interval
// 2.1-4.0 points)" for a difference of shares; "" where it is not known.
enum class Reading { excess, below, points };

// How far below its reference a slowdown ratio puts a figure, in percent.
double percent_below(double ratio) { return (1 - 1 / ratio) * 100; }

std::string interval_text(const Cause& c, Reading reading) {
  if (!c.interval) return "";
  const auto [lo, hi] = *c.interval;
  switch (reading) {
    case Reading::excess:
      return " (95% interval " + fixed((lo - 1) * 100, 1) + "-" + fixed((hi - 1) * 100, 1) + "%)";
    case Reading::below:
      return " (95% interval " + fixed(percent_below(lo), 1) + "-" + fixed(percent_below(hi), 1) +
             "%)";
    case Reading::points:
      break;
  }
  return " (95% interval " + fixed(lo * 100, 1) + "-" + fixed(hi * 100, 1) + " points)";
}

std::string throttled_text(const Cause& c) {
  return "clock " + fixed(*c.figure / 1e9, 2) + " GHz is " + fixed(percent_below(*c.ratio), 1) +
         "% below the " + c.cpu_kind + " reference " + fixed(*c.reference / 1e9, 2) + " GHz" +
         interval_text(c, Reading::below);
}

std::string noisy_text(const Cause& c) {
  const LostTime& d = *c.lost;
  std::string text = "loses " + fixed(d.noise_ratio * 100, 1) + "% of its time to " +
                     std::to_string(d.detours) + " detours (max " + fixed(d.max_seconds * 1e6, 0) +
                     " us), " + fixed(*c.ratio * 100, 1) + " points above the node's floor" +
                     interval_text(c, Reading::points) + ": " + lost_time_text(d);
  if (c.clock_read_low) {
    text += "; its clock reads " + fixed(percent_below(*c.clock_read_low), 1) +
            "% low, as detours this large make it";
  }
  return text;
}

std::string contended_text(const Cause& c) {
  return "memory bandwidth " + fixed(*c.figure / 1e9, 1) + " GB/s is " +
         fixed(percent_below(*c.ratio), 1) + "% below the reference with normal clock and noise" +
         interval_text(c, Reading::below);
}

std::string slow_text(const Cause& c) {
  return "matmul " + fixed((*c.ratio - 1) * 100, 1) + "% slower than the reference" +
         interval_text(c, Reading::excess) + "; clock, noise and memory are normal";
}

std::string skipped_text(const Cause& c) {
  switch (c.skipped.value_or(SkipReason::other)) {
    case SkipReason::not_selected:
      return "not selected";
    case SkipReason::not_probed:
      return "not probed";
    case SkipReason::no_samples:
      return "no samples (round cancelled)";
    case SkipReason::busy:
      return "busy (" + compact_percent_text(*c.figure, 0) + " since the last round)";
    case SkipReason::no_rank:
      return "no rank of the job on it";
    case SkipReason::other:
      break;
  }
  return c.detail;
}

// The re-measurement's figure on its test's scale: points of excess noise
// for noisy, else the slowdown's excess in percent.
std::string again_text(const Cause& c) {
  const auto& figure = c.confirmation->figure;
  if (!figure) return "not measured";
  return c.state == CoreState::noisy ? points_text(*figure) : excess_percent_text(*figure);
}

std::string confirmed_text(const Cause& c, const std::string& suspected) {
  const int rounds = c.confirmation->rounds;
  const std::string times =
      rounds == 1 ? std::string("re-measurement") : std::to_string(rounds) + " re-measurements";
  if (c.confirmation->confirmed)
    return suspected + "; confirmed on " + times + " (" + again_text(c) + ")";
  return "transient: " + std::string(to_string(c.state)) + " in the round (" + suspected +
         "), not borne out on re-measurement" + (rounds == 1 ? "" : " " + std::to_string(rounds)) +
         " (" + again_text(c) + ")";
}

std::string thermal_text(const Cause::Thermal& t, const std::string& rest) {
  return std::to_string(t.core_events) + " core and " + std::to_string(t.package_events) +
         " package thermal throttle events during the round" + (rest.empty() ? "" : "; " + rest);
}

std::string recurrence_text(const Cause::Recurrence& r, const std::string& rest) {
  return std::string(to_string(r.state)) + " in " + std::to_string(r.unhealthy) + " of its last " +
         std::to_string(r.rounds) + " measured rounds (" + std::to_string(r.needed) +
         " make it persistent): " + rest;
}

}  // namespace

std::string lost_time_text(const LostTime& lost) {
  return lost.traced ? attribute(lost, *lost.traced) : attribute(lost);
}

std::string suspected_cause_text(const Cause& c) {
  if (!complete(c)) return "";
  switch (c.state) {
    case CoreState::throttled:
      return throttled_text(c);
    case CoreState::noisy:
      return noisy_text(c);
    case CoreState::contended:
      return contended_text(c);
    case CoreState::slow:
      return slow_text(c);
    case CoreState::skipped:
      return skipped_text(c);
    default:
      return "";
  }
}

std::string cause_text(const Cause& c) {
  std::string text = suspected_cause_text(c);
  if (c.confirmation) text = confirmed_text(c, text);
  if (c.thermal) text = thermal_text(*c.thermal, text);
  if (c.recurrence) text = recurrence_text(*c.recurrence, text);
  return text;
}

}  // namespace corenoise
