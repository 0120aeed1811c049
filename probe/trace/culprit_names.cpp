#include "probe/trace/culprit_names.h"

#include <sched.h>

namespace corenoise::trace {
namespace {

// The kernel's priorities: 0-99 real time (higher urgency lower), 100-139
// the nice levels -20..19.
constexpr int kMaxRtPrio = 100;
constexpr int kDefaultPrio = 120;

std::string scheduling_of(int pid, int prio) {
  if (prio < 0) return {};
  if (prio >= kMaxRtPrio) {
    const int nice = prio - kDefaultPrio;
    return nice == 0 ? std::string() : "nice " + std::to_string(nice);
  }
  const int policy = sched_getscheduler(pid);
  const char* name = policy == SCHED_FIFO ? "FIFO" : policy == SCHED_RR ? "RR" : "RT";
  return std::string(name) + " " + std::to_string(kMaxRtPrio - 1 - prio);
}

}  // namespace

std::string describe(const Culprit& c) {
  switch (c.kind) {
    case CulpritKind::task: {
      // The CPU idled: the probe thread was not runnable yet -- the late
      // wake-up at the start of a window that a recorded-whole concurrent
      // round sees -- and nothing took its place.
      if (c.id == 0) return "the idle task (the probe thread waking up)";
      // No id: several tasks of one command, or one not to be named.
      std::string text = c.id < 0 ? c.name : c.name + "[" + std::to_string(c.id) + "]";
      if (!c.scheduling.empty()) text += " (" + c.scheduling + ")";
      return text;
    }
    case CulpritKind::irq:
      if (c.id < 0) return "the " + c.name + " interrupt";
      return "IRQ " + std::to_string(c.id) + (c.name.empty() ? "" : " (" + c.name + ")");
    case CulpritKind::softirq:
      return "softirq " + c.name;
    case CulpritKind::work:
      return "work " + c.name;
    case CulpritKind::below_kernel:
      return "below the kernel (hypervisor or SMI)";
    case CulpritKind::kernel:
      return "the kernel's entry and exit";
    case CulpritKind::events_lost:
      return "events the tracer lost";
    case CulpritKind::untraced:
      return "untraced (the wait before a window)";
  }
  return {};
}

const char* kind_name(CulpritKind kind) {
  switch (kind) {
    case CulpritKind::task:
      return "task";
    case CulpritKind::irq:
      return "irq";
    case CulpritKind::softirq:
      return "softirq";
    case CulpritKind::work:
      return "work";
    case CulpritKind::below_kernel:
      return "below_kernel";
    case CulpritKind::kernel:
      return "kernel";
    case CulpritKind::events_lost:
      return "events_lost";
    case CulpritKind::untraced:
      return "untraced";
  }
  return "";
}

std::string label_name(const Culprit& c) {
  switch (c.kind) {
    case CulpritKind::task:
      // Kernel threads name their CPU or worker after a '/'.
      return c.name.substr(0, c.name.find('/'));
    case CulpritKind::irq:
    case CulpritKind::softirq:
    case CulpritKind::work:
      return c.name;
    default:
      return kind_name(c.kind);
  }
}

void resolve_scheduling(Attribution& a) {
  for (Culprit& c : a.culprits) {
    if (c.kind == CulpritKind::task) c.scheduling = scheduling_of(c.id, c.prio);
  }
}

}  // namespace corenoise::trace
