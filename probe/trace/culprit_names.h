// How a culprit reads in a cause, a table and a metric label.
#pragma once

#include <string>

#include "probe/trace/culprit_matcher.h"

namespace corenoise::trace {

// "inj[1234] (FIFO 50)", "IRQ 24 (eth0)", "the local_timer interrupt",
// "softirq NET_RX", "work vmstat_update", "below the kernel (hypervisor or
// SMI)", "events the tracer lost", "untraced (the wait before a window)".
std::string describe(const Culprit& c);

// The kind as the JSON and the metrics name it: task, irq, softirq, work,
// below_kernel, events_lost, untraced.
const char* kind_name(CulpritKind kind);

// A name of bounded cardinality for a metric label: no pid, and a kernel
// thread's per-CPU or per-worker suffix dropped (kworker/1:2H-events and
// kworker/u4:0 are both "kworker", ksoftirqd/1 "ksoftirqd").
std::string label_name(const Culprit& c);

// Fills each task's `scheduling` from its kernel priority and, for a real-
// time task, its policy as the kernel reports it now (FIFO or RR; "RT" if
// the task is gone). Impure: asks the kernel.
void resolve_scheduling(Attribution& a);

}  // namespace corenoise::trace
