#include "probe/trace/span_charges.h"

#include <algorithm>
#include <climits>

namespace corenoise::trace {
namespace {

// No task has this id: the matcher's "probe thread" is nobody here, so
// every task's time is charged to it by name.
constexpr int kNoProbe = INT_MIN;

}  // namespace

Attribution charge_span(std::span<const Event> events, std::uint64_t from, std::uint64_t to,
                        SpanCarry& carry) {
  std::vector<Event> replay;
  replay.reserve(carry.later.size() + events.size() + 1);
  if (carry.known) {
    Event start = carry.running;
    start.time = from;
    replay.push_back(std::move(start));
  }
  std::vector<Event> later;
  const auto take = [&](const Event& e) {
    if (e.time >= to) {
      later.push_back(e);
      return;
    }
    // Before the span: a CPU's buffer holds them from before it was
    // recorded again; they say nothing of who runs now. But a gap the
    // reader found before any record (stamped 0) opens this span.
    if (e.time < from) {
      if (e.kind != EventKind::lost) return;
      Event gap = e;
      gap.time = from;
      carry.known = false;
      replay.push_back(gap);
      return;
    }
    if (e.kind == EventKind::task_switch) {
      carry.known = true;
      carry.running = e;
    } else if (e.kind == EventKind::lost) {
      carry.known = false;  // who ran after the gap is unknown
    }
    replay.push_back(e);
  };
  for (const Event& e : carry.later) take(e);
  for (const Event& e : events) take(e);
  carry.later = std::move(later);
  std::stable_sort(replay.begin(), replay.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  const Detour span{from, std::max(from, to)};
  Attribution out = match_detours(std::span(&span, 1), replay, kNoProbe);
  // Before the first switch ever seen: the matcher's stand-in for the
  // probe, which is nobody.
  std::erase_if(out.culprits, [](const Culprit& c) {
    return c.kind == CulpritKind::kernel || c.kind == CulpritKind::below_kernel ||
           (c.kind == CulpritKind::task && c.id == kNoProbe);
  });
  return out;
}

}  // namespace corenoise::trace
