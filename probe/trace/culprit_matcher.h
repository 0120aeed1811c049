// Charges each microsecond of a CPU's detours to what ran instead of the
// probe: a task, an IRQ, a softirq, a kernel work item -- or to nothing the
// kernel saw, which is the hypervisor or firmware ("below the kernel").
//
// The events of the CPU (probe/trace/trace_events.h) are replayed as a
// timeline of who had the CPU: the running task, and above it the work
// item a kworker executes, a softirq and an IRQ, innermost first. Each
// detour [start, end) is cut along that timeline and each piece charged to
// the innermost context of its time. A piece where the probe's own thread
// ran with nothing above it is, in a detour that holds a kernel event, the
// kernel's entry and exit around it (`kernel`: no tracepoint covers them,
// nor NMIs), and in a detour with none, time the kernel never saw leave the
// probe (`below_kernel`: the hypervisor, an SMI).
// After a buffer overrun (a `lost` event, at the last record before the
// gap) who had the CPU is unknown until the next task switch, however many
// window marks the gap holds: that time is charged to `events_lost`,
// never guessed. Detour time while tracing was off -- a window's first detour is
// the wait for the CPU before the probe thread could switch tracing on --
// is `untraced`.
//
// Pure: no I/O, no clock; events sorted by time, detours by start and
// disjoint (as one probe thread's windows make them).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "probe/trace/trace_events.h"

namespace corenoise::trace {

enum class CulpritKind : std::uint8_t {
  task,
  irq,
  softirq,
  work,
  below_kernel,
  kernel,  // the kernel's entry and exit around the events of a detour
  events_lost,
  untraced
};

struct Culprit {
  CulpritKind kind = CulpritKind::below_kernel;
  std::string name;           // command, IRQ name or vector, softirq vector (NET_RX), work function
  int id = -1;                // pid, IRQ number, softirq vector; -1 where none
  int prio = -1;              // a task's kernel priority (0-99: real time), else -1
  std::string scheduling;     // a task's policy and priority ("FIFO 50"), by resolve_scheduling
  std::uint64_t ticks = 0;    // detour time charged to it
  std::uint64_t detours = 0;  // detours it took part in
  double seconds = 0;         // `ticks` in seconds, where the caller converted them
  bool operator==(const Culprit&) const = default;
};

struct Detour {
  std::uint64_t start = 0, end = 0;  // [start, end), the trace clock's ticks
};

struct Attribution {
  std::uint64_t detour_ticks = 0;  // all detour time; the culprits' ticks sum to it
  double detour_seconds = 0;       // in seconds, where the caller converted them
  std::vector<Culprit> culprits;   // by ticks, the largest first
  std::uint64_t lost_events = 0;   // reported dropped by the tracer (0 and
  bool overran = false;            // overran: some were, of an unknown count)
};

// `probe_pid`: the probe thread's id, which had the CPU when tracing began;
// where the tracer's pids are another namespace's, the first switch away
// from the probe after a window's mark corrects it.
Attribution match_detours(std::span<const Detour> detours, std::span<const Event> events,
                          int probe_pid);

// Adds another CPU window's attribution (culprits of the same kind, name
// and id summed).
void merge(Attribution& into, const Attribution& more);

// Fills the seconds from the ticks.
void convert_to_seconds(Attribution& a, double ticks_per_second);

// The softirq vector's name as the kernel prints it (NET_RX), or "vector N".
std::string softirq_name(int vector);

}  // namespace corenoise::trace
