#include "probe/trace/culprit_matcher.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <tuple>

namespace corenoise::trace {
namespace {

// Who had the CPU at some moment, as far as the trace says.
struct Context {
  CulpritKind kind = CulpritKind::below_kernel;
  std::string name;
  int id = -1;
  int prio = -1;
};

// One culprit: the same kind, id and name (a task's priority may change).
template <typename A, typename B>
bool same_culprit(const A& a, const B& b) {
  return a.kind == b.kind && a.id == b.id && a.name == b.name;
}

// The culprits met so far, and the detour each last took part in (so that
// a culprit met twice in one detour counts that detour once).
class Ledger {
 public:
  void charge(const Context& who, std::uint64_t ticks, std::size_t detour) {
    if (ticks == 0) return;
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return same_culprit(e.culprit, who); });
    if (it == entries_.end()) {
      Culprit culprit;
      culprit.kind = who.kind;
      culprit.name = who.name;
      culprit.id = who.id;
      culprit.prio = who.prio;
      entries_.push_back({std::move(culprit), detour});
      it = entries_.end() - 1;
      it->culprit.detours = 1;
    } else if (it->last_detour != detour) {
      it->last_detour = detour;
      ++it->culprit.detours;
    }
    it->culprit.ticks += ticks;
  }

  std::vector<Culprit> take() {
    std::vector<Culprit> out;
    out.reserve(entries_.size());
    for (auto& e : entries_) out.push_back(std::move(e.culprit));
    return out;
  }

 private:
  struct Entry {
    Culprit culprit;
    std::size_t last_detour;
  };
  std::vector<Entry> entries_;  // a CPU's culprits are few: a linear search
};

void sort_culprits(std::vector<Culprit>& culprits) {
  std::sort(culprits.begin(), culprits.end(), [](const Culprit& a, const Culprit& b) {
    return std::tie(b.ticks, a.kind, a.name, a.id) < std::tie(a.ticks, b.kind, b.name, b.id);
  });
}

// The timeline's replay: the state the events build, and the detours cut
// along it as it advances.
class Replay {
 public:
  Replay(std::span<const Detour> detours, std::span<const Event> events, int probe_pid)
      : detours_(detours),
        probe_pid_(probe_pid),
        probe_pending_(detours.size(), 0),
        kernel_seen_(detours.size(), 0) {
    task_ = {CulpritKind::task, "", probe_pid, -1};
    untraced_ = std::any_of(events.begin(), events.end(),
                            [](const Event& e) { return e.kind == EventKind::tracing_on; });
  }

  // Charges [from, to) to whoever has the CPU now. Time the probe thread
  // itself had waits (probe_pending_) until its detour is known to hold a
  // kernel event or not.
  void advance(std::uint64_t from, std::uint64_t to) {
    while (next_ < detours_.size() && detours_[next_].end <= from) ++next_;
    const Context& who = current();
    for (std::size_t d = next_; d < detours_.size() && detours_[d].start < to; ++d) {
      const std::uint64_t lo = std::max(from, detours_[d].start);
      const std::uint64_t hi = std::min(to, detours_[d].end);
      if (hi <= lo) continue;
      if (&who == &kProbeRuns) {
        probe_pending_[d] += hi - lo;
      } else {
        ledger_.charge(who, hi - lo, d);
      }
    }
  }

  void apply(const Event& e, Attribution& out) {
    const bool from_kernel = e.kind != EventKind::tracing_on && e.kind != EventKind::tracing_off &&
                             e.kind != EventKind::lost;
    if (from_kernel) {
      in_gap_ = false;  // the first record after an overrun ends its gap
      mark_kernel_event(e.time);
    }
    switch (e.kind) {
      case EventKind::task_switch:
        switch_task(e);
        break;
      case EventKind::irq_entry:
        if (!unknown_) nested_.push_back({CulpritKind::irq, e.name, e.number, -1});
        break;
      case EventKind::softirq_entry:
        if (!unknown_)
          nested_.push_back({CulpritKind::softirq, softirq_name(e.number), e.number, -1});
        break;
      case EventKind::irq_exit:
        close(CulpritKind::irq);
        break;
      case EventKind::softirq_exit:
        close(CulpritKind::softirq);
        break;
      case EventKind::work_start:
        if (!unknown_) work_[task_.id] = {CulpritKind::work, e.name, -1, -1};
        break;
      case EventKind::work_end:
        work_.erase(task_.id);
        break;
      case EventKind::tracing_on:
        window_mark();
        break;
      case EventKind::tracing_off:
        untraced_ = true;
        break;
      case EventKind::lost:
        lose_events(e, out);
        break;
    }
  }

  void switch_task(const Event& e) {
    // The task running at a window's mark is the probe thread: its first
    // switch away gives the probe's pid as the tracer sees it (another
    // PID namespace's than gettid's, in a container).
    if (probe_at_mark_ && e.prev_pid > 0) probe_pid_ = e.prev_pid;
    probe_at_mark_ = false;
    // A switch happens in task context: whatever was open above the
    // old task closed unseen, and who runs is known again.
    task_ = {CulpritKind::task, e.name, e.pid, e.prio};
    nested_.clear();
    unknown_ = false;
  }

  void window_mark() {
    untraced_ = false;
    // The probe thread wrote this mark, so it had the CPU then -- unless
    // the mark lies in an overrun's gap, whose events are gone.
    if (in_gap_) return;
    task_ = {CulpritKind::task, "", probe_pid_, -1};
    nested_.clear();
    work_.clear();
    unknown_ = false;
    probe_at_mark_ = true;
  }

  void lose_events(const Event& e, Attribution& out) {
    unknown_ = in_gap_ = true;
    probe_at_mark_ = false;
    nested_.clear();
    work_.clear();
    out.overran = true;
    out.lost_events += static_cast<std::uint64_t>(std::max(e.number, 0));
  }

  // The probe thread's own time in each detour: the kernel's entry and exit
  // around the events it holds, or, in a detour with no kernel event at
  // all, time the kernel never saw leave the probe.
  std::vector<Culprit> culprits() {
    static const Context kernel{CulpritKind::kernel, "", -1, -1};
    static const Context below{CulpritKind::below_kernel, "", -1, -1};
    for (std::size_t d = 0; d < detours_.size(); ++d)
      ledger_.charge(kernel_seen_[d] ? kernel : below, probe_pending_[d], d);
    return ledger_.take();
  }

 private:
  static inline const Context kProbeRuns{CulpritKind::below_kernel, "", -1, -1};

  const Context& current() const {
    static const Context lost{CulpritKind::events_lost, "", -1, -1};
    static const Context untraced{CulpritKind::untraced, "", -1, -1};
    if (untraced_) return untraced;
    if (unknown_) return lost;
    if (!nested_.empty()) return nested_.back();
    if (auto it = work_.find(task_.id); it != work_.end()) return it->second;
    return task_.id == probe_pid_ ? kProbeRuns : task_;
  }

  // The detour holding `time`, if any, holds a kernel event.
  void mark_kernel_event(std::uint64_t time) {
    auto it = std::upper_bound(detours_.begin(), detours_.end(), time,
                               [](std::uint64_t t, const Detour& d) { return t < d.start; });
    if (it == detours_.begin()) return;
    --it;
    if (time < it->end) kernel_seen_[static_cast<std::size_t>(it - detours_.begin())] = 1;
  }

  // The innermost open context of `kind`, and any left open above it
  // (their exits were not seen).
  void close(CulpritKind kind) {
    for (auto it = nested_.rbegin(); it != nested_.rend(); ++it) {
      if (it->kind == kind) {
        nested_.erase(std::prev(it.base()), nested_.end());
        return;
      }
    }
    // An exit whose entry came before tracing began: nothing to close.
  }

  std::span<const Detour> detours_;
  int probe_pid_;
  std::size_t next_ = 0;  // the first detour not yet wholly behind the replay
  Context task_;
  std::vector<Context> nested_;               // IRQs and softirqs, innermost last
  std::map<int, Context> work_;               // the work item each kworker is executing
  bool unknown_ = false;                      // after an overrun, until the next task switch
  bool in_gap_ = false;                       // in an overrun's gap, until the next kernel record
  bool untraced_ = false;                     // tracing was off
  bool probe_at_mark_ = false;                // the probe has run since a window's mark
  std::vector<std::uint64_t> probe_pending_;  // per detour: the probe's own ticks
  std::vector<char> kernel_seen_;             // per detour: a kernel event inside it
  Ledger ledger_;
};

}  // namespace

Attribution match_detours(std::span<const Detour> detours, std::span<const Event> events,
                          int probe_pid) {
  Attribution out;
  for (const Detour& d : detours) out.detour_ticks += d.end > d.start ? d.end - d.start : 0;
  Replay replay(detours, events, probe_pid);
  std::uint64_t now = 0;
  for (const Event& e : events) {
    replay.advance(now, std::max(now, e.time));
    now = std::max(now, e.time);
    replay.apply(e, out);
  }
  replay.advance(now, std::numeric_limits<std::uint64_t>::max());
  out.culprits = replay.culprits();
  sort_culprits(out.culprits);
  return out;
}

void merge(Attribution& into, const Attribution& more) {
  into.detour_ticks += more.detour_ticks;
  into.detour_seconds += more.detour_seconds;
  into.lost_events += more.lost_events;
  into.overran = into.overran || more.overran;
  for (const Culprit& c : more.culprits) {
    auto it = std::find_if(into.culprits.begin(), into.culprits.end(),
                           [&](const Culprit& x) { return same_culprit(x, c); });
    if (it == into.culprits.end()) {
      into.culprits.push_back(c);
    } else {
      it->ticks += c.ticks;
      it->seconds += c.seconds;
      it->detours += c.detours;
    }
  }
  sort_culprits(into.culprits);
}

void convert_to_seconds(Attribution& a, double ticks_per_second) {
  a.detour_seconds = static_cast<double>(a.detour_ticks) / ticks_per_second;
  for (Culprit& c : a.culprits) c.seconds = static_cast<double>(c.ticks) / ticks_per_second;
}

std::string softirq_name(int vector) {
  // include/linux/interrupt.h's order, as /proc/softirqs and the tracer print them.
  static constexpr std::array<const char*, 10> kNames = {
      "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
  if (vector >= 0 && vector < static_cast<int>(kNames.size())) return kNames[vector];
  return "vector " + std::to_string(vector);
}

}  // namespace corenoise::trace
