// What the daemon knows after its latest rounds, as one immutable value.
// The event loop builds a new Snapshot after every round (or pause,
// publication or job report) and swaps it in; the exporter's threads render
// whichever snapshot is current at scrape time, without locks on the probe
// path and without doing any work beyond rendering.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/job_admission.h"
#include "daemon/job_totals.h"
#include "daemon/persistence.h"
#include "probe/report.h"

namespace corenoise {

// Ratio figures are keyed by (cpu, probe, mode).
struct ProbeKey {
  unsigned cpu = 0;
  RatioProbe probe = ratio_probe(ProbeKind::matmul);
  Mode mode = Mode::isolated;
  auto operator<=>(const ProbeKey&) const = default;
};

// Monotonic per-CPU counters, summed over every round since start.
struct CpuCounterTotals {
  std::uint64_t detours = 0;
  double detour_seconds = 0;
};

// /sys facts about a CPU where the kernel exposes them (bare metal).
struct CpuSysInfo {
  std::optional<std::uint64_t> core_throttle_count;     // thermal_throttle/core_throttle_count
  std::optional<std::uint64_t> package_throttle_count;  // thermal_throttle/package_throttle_count
  std::optional<double> cur_hertz;                      // cpufreq/scaling_cur_freq
  std::optional<double> max_hertz;                      // cpufreq/cpuinfo_max_freq
};

struct RoundStats {
  std::uint64_t rounds = 0;                 // rounds completed in this mode
  std::optional<double> last_unix_seconds;  // start of the latest round
  std::optional<double> last_duration_seconds;
};

struct Snapshot {
  std::string version;
  // Topology and the latest round of each mode that has run (report.modes
  // holds at most one ModeReport per mode, isolated first). Before the first
  // round, report.modes is empty and every PU is listed.
  NodeReport report;
  // By cpu, after each CPU's latest round: its persistent state (what
  // corenoise_core_state, status, exit 2, drains and alerts act on) and
  // that round's own verdict. Empty before the first round.
  std::map<unsigned, PersistentVerdict> persistence;
  std::map<Mode, RoundStats> rounds;
  std::map<unsigned, CpuCounterTotals> totals;  // by cpu
  // Latest figure / the core's persisted calibration (>1: worse than its baseline).
  std::map<ProbeKey, double> baseline_slowdown;
  // Latest figure / the cluster reference the collector published.
  std::map<ProbeKey, double> cluster_slowdown;
  std::optional<double> cluster_published_unix_seconds;
  std::map<unsigned, CpuSysInfo> sys;  // by cpu; absent where /sys has nothing
  JobTotals jobs;                      // what jobs reported since start
  JobLiveView jobs_live;               // the running jobs' live figures (job-live)
  bool paused = false;
  std::optional<double> paused_until_unix_seconds;  // nullopt while paused: until resumed
  double started_unix_seconds = 0;
};

// The verdict of PU `index` of snapshot.report: its persistence entry, or,
// where there is none (a snapshot built without history), the report's own
// state taken as a one-round history (persist-rounds 1).
inline PersistentVerdict verdict_of(const Snapshot& snapshot, std::size_t index) {
  const NodeReport& report = snapshot.report;
  if (const auto it = snapshot.persistence.find(report.pus[index].cpu);
      it != snapshot.persistence.end()) {
    return it->second;
  }
  PersistentVerdict v;
  v.state = v.round_state = report.state(index);
  if (!report.modes.empty()) {
    const auto& cores = report.modes[report.deciding_mode(index)].verdicts.cores;
    if (index < cores.size()) v.cause = v.round_cause = cores[index].cause;
  }
  v.rounds = v.state == CoreState::skipped ? 0 : 1;
  v.unhealthy_rounds = is_unhealthy(v.state) ? 1 : 0;
  return v;
}

// True if no PU is persistently unhealthy.
inline bool persistently_healthy(const Snapshot& snapshot) {
  for (std::size_t i = 0; i < snapshot.report.pus.size(); ++i) {
    if (is_unhealthy(verdict_of(snapshot, i).state)) return false;
  }
  return true;
}

using SnapshotPtr = std::shared_ptr<const Snapshot>;

// What the counters beside the snapshot read at one moment.
struct LiveCounts {
  // Job lines refused, by reason (indexed by JobRefusal).
  std::array<std::uint64_t, kJobRefusalCount> job_refused{};
  bool operator==(const LiveCounts&) const = default;
};

// Counters that move between snapshots, read at every scrape. Any local
// user may send refused job lines as fast as the control server reads
// them: each is counted here, so that none makes a new snapshot, nor the
// exporter render the node again. Thread-safe.
class LiveCounters {
 public:
  void count_job_refusal(JobRefusal reason) {
    job_refused_[index_of(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  LiveCounts read() const {
    LiveCounts counts;
    for (std::size_t i = 0; i < kJobRefusalCount; ++i) {
      counts.job_refused[i] = job_refused_[i].load(std::memory_order_relaxed);
    }
    return counts;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kJobRefusalCount> job_refused_{};
};

// Holds the current snapshot and the counters beside it: what /metrics
// serves. Thread-safe: set() and the counters' increments on the event
// loop, get() and read() from any thread (exporter, control socket).
class SnapshotStore {
 public:
  SnapshotPtr get() const { return std::atomic_load(&current_); }
  void set(SnapshotPtr snapshot) { std::atomic_store(&current_, std::move(snapshot)); }
  LiveCounters& live() { return live_; }
  const LiveCounters& live() const { return live_; }

 private:
  SnapshotPtr current_ = std::make_shared<const Snapshot>();
  LiveCounters live_;
};

}  // namespace corenoise
