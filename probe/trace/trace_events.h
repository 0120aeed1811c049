// What the kernel's tracer saw on one CPU, as corenoise's matcher reads it:
// a time-ordered list of the few events that say who had the CPU. Plain
// data, filled by a tracing source (probe/trace/tracefs_source.h) or by a
// test from a recorded stream; no libtraceevent types leak past the source.
#pragma once

#include <cstdint>
#include <string>

namespace corenoise::trace {

enum class EventKind : std::uint8_t {
  task_switch,    // sched:sched_switch: `pid`, `name`, `prio` run next
  irq_entry,      // irq:irq_handler_entry (`number`, `name`), or an x86
                  // system vector's irq_vectors:*_entry (`number` -1,
                  // `name` the vector: local_timer, reschedule, ...)
  irq_exit,       // the matching exit
  softirq_entry,  // irq:softirq_entry: `number` the vector (NET_RX = 3)
  softirq_exit,
  work_start,  // workqueue:workqueue_execute_start: `name` the function
  work_end,
  lost,  // the ring buffer overran: `number` events (0: an unknown count)
         // were dropped after this point (the last record before the gap)
         // and before the next kernel record
  // The probe thread switched its CPU's tracing on just before a window,
  // or off after it (the source's own marks, not the kernel's). A stream
  // with neither is traced throughout.
  tracing_on,
  tracing_off,
};

struct Event {
  std::uint64_t time = 0;  // the trace clock, in the probe's TSC ticks
  EventKind kind = EventKind::lost;
  int pid = 0;     // task_switch: the next task
  int prio = 0;    // task_switch: the next task's kernel priority (0-99 real time)
  int number = 0;  // IRQ number, softirq vector, events lost
  std::string name;
  int prev_pid = 0;  // task_switch: the task that ran until then
};

}  // namespace corenoise::trace
