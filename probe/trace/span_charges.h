// Who had one CPU over a span of continuous recording, from its events:
// every task's time (the idle task's and the job's own included, for the
// caller to leave out), and the IRQs, softirqs and kernel work items above
// them. The daemon records a running job's CPUs whole, not a probe's
// windows (daemon/job_tracer.h), and reads them every second: each read is
// one span, and who ran at its end carries to the next.
//
// Pure: no I/O, no clock. It replays the events with match_detours
// (culprit_matcher.h), the span as one detour.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "probe/trace/culprit_matcher.h"
#include "probe/trace/trace_events.h"

namespace corenoise::trace {

// What one span leaves the next: the task running at its end, and the
// events read with it that lie past its end (the reader's clock reading
// came before the read).
struct SpanCarry {
  bool known = false;  // a task switch was seen: `running` says who runs
  Event running;       // that switch
  std::vector<Event> later;
};

// The time in [from, to) of each context that had the CPU: tasks by
// thread id (the idle task is pid 0), IRQs, softirqs and work items. The
// time before the first task switch ever seen is unknown and charged to
// nothing (the culprits' ticks then sum to less than the span), as is the
// time after a gap in the events (an overrun) until the next switch in a
// later span. `events`: those before `from` are ignored, those at or past
// `to` wait in `carry` for the next span.
Attribution charge_span(std::span<const Event> events, std::uint64_t from, std::uint64_t to,
                        SpanCarry& carry);

}  // namespace corenoise::trace
