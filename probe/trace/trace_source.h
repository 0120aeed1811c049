// Where the kernel says who had a probed CPU during its detour windows:
// one interface, a backend chosen at run time. Today the one backend is a
// tracefs instance of corenoise's own (probe/trace/tracefs_source.cpp);
// without tracefs or privileges there is none, and rounds attribute from
// /proc alone as before.
//
// Lifecycle: opened once per process (a probe, a sweep rank, the daemon)
// for the CPUs it may probe; each probe thread marks its windows from its
// own CPU; after a round, the runner takes each CPU's events. Threads: the
// window marks may come from every probe thread at once; take() from one
// thread, between rounds.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/trace/trace_events.h"

namespace corenoise::trace {

class TraceSource {
 public:
  virtual ~TraceSource() = default;
  // On the probe thread, on `cpu`, just before its window and just after
  // it: the CPU's events are recorded at least between the two (a round
  // recorded whole, round_begins, records longer). Cheap (a write to an
  // open file), outside the window, and never throws. window_begins
  // returns the TSC of its mark: tracing was on from then.
  virtual std::uint64_t window_begins(unsigned cpu) noexcept = 0;
  virtual void window_ends(unsigned cpu) noexcept = 0;
  // The round gave up on `cpu`'s probe thread (past its deadline) inside a
  // window: stop recording for it, as if the window had ended.
  virtual void window_abandoned(unsigned cpu) noexcept = 0;
  // A concurrent round: its windows run on every CPU at once, back to back
  // behind a barrier. The instance's cpumask and tracing_on are one file
  // each, so a window switching them would cut its neighbours' short (ranks
  // of one node, which cannot share a count), and in one process would cost
  // each CPU two writes per sample under one lock (on a large node the last
  // window would open milliseconds after the first). The source records
  // `cpus` from round_begins to round_ends instead; windows are still
  // marked, and only their detours are matched. An attached source
  // (attach_trace_source) records nothing itself: its owner's
  // round_begins did.
  virtual void round_begins(std::span<const unsigned> cpus) noexcept = 0;
  virtual void round_ends() noexcept = 0;
  // The instance other processes of the node attach to; "" where none.
  virtual std::string instance_name() const = 0;
  // What was recorded on `cpu` since the last take, in time order, with
  // the marks of its windows (tracing_on, tracing_off) among them. Throws
  // std::runtime_error for a CPU not traced or a trace it cannot read.
  virtual std::vector<Event> take(unsigned cpu) = 0;
  // Stops recording and removes what the kernel holds for us, now (a
  // process about to exit, whose destructors will not run): later marks
  // do nothing and take() throws.
  virtual void release() noexcept = 0;
};

enum class TraceMode { off, on, automatic };

// The source for `cpus`, or nullptr: for `off`, and for `automatic` where
// tracing is not available (not root, no tracefs, no x86-tsc trace clock,
// a kernel without the events), with the reason in *why_not. For `on`
// where it is not available, throws std::runtime_error with that reason
// after `asked_as` (how the user said on: "--trace on", "trace = on").
// `buffer_kib`: each traced CPU's ring buffer.
std::unique_ptr<TraceSource> open_trace_source(TraceMode mode, std::span<const unsigned> cpus,
                                               std::string* why_not,
                                               const std::string& asked_as = "--trace on",
                                               unsigned buffer_kib = 512);

// The node's ranks of `corenoise sweep --rank-per-core` each probe their
// own core: the leader opens the source for every rank's CPU, and each rank
// attaches to it by instance_name() for its `cpu` alone, marks its own
// windows and takes its own CPU's events. An isolated round's turns keep
// the ranks' windows apart, so each switches recording for its window as
// one process would; a concurrent round is recorded whole by the owner.
// The owner removes the instance; every attached source must be gone
// first (an open file of the instance keeps the kernel from removing it).
// Throws std::runtime_error saying why it cannot attach.
std::unique_ptr<TraceSource> attach_trace_source(const std::string& instance, unsigned cpu);

// What a report says of its tracing (NodeReport::trace): "on" where a
// source is open, "off" where none was asked for, else "unavailable: WHY".
inline std::string trace_status(TraceMode mode, bool traced, const std::string& why_not) {
  if (traced) return "on";
  return mode == TraceMode::off ? "off" : "unavailable: " + why_not;
}

// "auto", "on", "off" (what --trace takes); throws std::invalid_argument.
inline TraceMode parse_trace_mode(const std::string& text) {
  if (text == "auto") return TraceMode::automatic;
  if (text == "on") return TraceMode::on;
  if (text == "off") return TraceMode::off;
  throw std::invalid_argument("got '" + text + "', expected auto, on or off");
}

}  // namespace corenoise::trace
