#include "daemon/exporter.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "probe/trace/culprit_names.h"

namespace corenoise {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// The families in the order they are served. An index into the table
// below; series are appended to whichever family they belong to while the
// snapshot is walked once, so each family's series stay contiguous.
enum Family : std::size_t {
  kBuildInfo,
  kStartTime,
  kPaused,
  kRoundTimestamp,
  kRoundDuration,
  kRoundsTotal,
  kClusterPublishTimestamp,
  kCpuInfo,
  kCoreState,
  kRoundCoreState,
  kCoreUnhealthyRounds,
  kProbeDuration,
  kSlowdown,
  kClusterSlowdown,
  kBaselineSlowdown,
  kClockHertz,
  kMatmulFlops,
  kMemoryBandwidth,
  kNoiseRatio,
  kExcessNoiseRatio,
  kDetourMax,
  kCulpritRatio,
  kDetoursTotal,
  kDetourSecondsTotal,
  kThermalThrottleTotal,
  kCpufreqHertz,
  kJobReportsTotal,
  kJobLastReportTimestamp,
  kJobLostSecondsTotal,
  kJobLiveWaitCausedSeconds,
  kJobLiveWindowWaitCausedSeconds,
  kJobLiveRanks,
  kJobLiveLastEpochTimestamp,
  kJobLiveIntervalSeconds,
  kJobLiveEndedTotal,
  // From the counters beside the snapshot (collect_live_metrics), after it.
  kJobReportsRefusedTotal,
  kFamilyCount,
};

struct FamilySpec {
  const char* name;
  MetricType type;
  const char* help;
};

// HELP texts name the unit and where the value comes from; docs/metrics.md
// says the same at length.
constexpr FamilySpec kFamilies[kFamilyCount] = {
    {"corenoise_build_info", MetricType::Gauge, "Always 1; the version label is corenoised's."},
    {"corenoise_start_time_seconds", MetricType::Gauge,
     "When corenoised started, in seconds since the Unix epoch."},
    {"corenoise_paused", MetricType::Gauge, "1 while probing is paused, else 0."},
    {"corenoise_round_timestamp_seconds", MetricType::Gauge,
     "Start of the last round of this mode, in seconds since the Unix epoch."},
    {"corenoise_round_duration_seconds", MetricType::Gauge,
     "Duration of the last round of this mode, in seconds."},
    {"corenoise_rounds_total", MetricType::Counter,
     "Rounds completed in this mode since corenoised started."},
    {"corenoise_cluster_publish_timestamp_seconds", MetricType::Gauge,
     "When the collector last published cluster slowdowns to this node, in seconds since the "
     "Unix epoch."},
    {"corenoise_cpu_info", MetricType::Gauge,
     "Always 1, one series per PU: its core and package (hwloc logical indexes), NUMA node (OS "
     "index) and CPU kind."},
    {"corenoise_core_state", MetricType::Gauge,
     "1 for the persistent state of this CPU, 0 for the other states: unhealthy only when "
     "persist-bad of its last persist-rounds measured rounds were, transient when fewer were."},
    {"corenoise_round_core_state", MetricType::Gauge,
     "1 for this CPU's own overall verdict in its latest round (first non-ok verdict of the "
     "round's modes), 0 for the other states."},
    {"corenoise_core_unhealthy_rounds", MetricType::Gauge,
     "How many of this CPU's last persist-rounds measured rounds were unhealthy."},
    {"corenoise_probe_duration_seconds", MetricType::Gauge,
     "From the last round of this mode: the uninterrupted time of one probe sample, in seconds "
     "(matmul: reps products; stream: one triad pass)."},
    {"corenoise_slowdown_ratio", MetricType::Gauge,
     "From the last round of this mode: slowdown versus the node's reference core of the same "
     "kind, as a ratio (1 = the reference, >1 slower); probe=expected is matmul x noise factor."},
    {"corenoise_cluster_slowdown_ratio", MetricType::Gauge,
     "From the last round of this mode: slowdown versus the cluster reference the collector "
     "published, as a ratio (>1 slower)."},
    {"corenoise_baseline_slowdown_ratio", MetricType::Gauge,
     "From the last round of this mode: slowdown versus this core's own calibration, as a ratio "
     "(>1 slower)."},
    {"corenoise_clock_hertz", MetricType::Gauge,
     "From the last round of this mode: effective core clock, in hertz."},
    {"corenoise_matmul_flops_per_second", MetricType::Gauge,
     "From the last round of this mode: matmul probe rate, in floating-point operations per "
     "second."},
    {"corenoise_memory_bandwidth_bytes_per_second", MetricType::Gauge,
     "From the last round of this mode: STREAM triad bandwidth, in bytes per second."},
    {"corenoise_noise_ratio", MetricType::Gauge,
     "From the last isolated round (else concurrent): share of time lost to detours, as a ratio "
     "0-1."},
    {"corenoise_excess_noise_ratio", MetricType::Gauge,
     "From the last isolated round (else concurrent): noise ratio minus the node's noise floor "
     "for this CPU kind, as a ratio."},
    {"corenoise_detour_max_seconds", MetricType::Gauge,
     "From the last isolated round (else concurrent): longest detour, in seconds."},
    {"corenoise_culprit_ratio", MetricType::Gauge,
     "From the last isolated round (else concurrent), where traced: share of the detour windows "
     "that this culprit took, as a ratio 0-1 (the largest few per CPU)."},
    {"corenoise_detours_total", MetricType::Counter,
     "Detours seen on this CPU over all rounds since corenoised started."},
    {"corenoise_detour_seconds_total", MetricType::Counter,
     "Time lost to detours on this CPU over all rounds since corenoised started, in seconds."},
    {"corenoise_thermal_throttle_events_total", MetricType::Counter,
     "Thermal throttle events the kernel counted (/sys thermal_throttle), once per core "
     "(scope=core) and once per package (scope=package), on their first CPU."},
    {"corenoise_cpufreq_hertz", MetricType::Gauge,
     "cpufreq frequency of this CPU when scraped (type=current) and its maximum (type=max), in "
     "hertz."},
    {"corenoise_job_reports_total", MetricType::Counter,
     "Ranks' job reports (corenoise job, at the end of an MPI job) accepted since corenoised "
     "started."},
    {"corenoise_job_last_report_timestamp_seconds", MetricType::Gauge,
     "When the job of the latest accepted report ended, in seconds since the Unix epoch."},
    {"corenoise_job_lost_seconds_total", MetricType::Counter,
     "Time this CPU lost to this cause while jobs ran, as the jobs measured it, summed over every "
     "job reported since corenoised started, in seconds."},
    {"corenoise_job_live_wait_caused_seconds", MetricType::Gauge,
     "A running job's rank on this node among the five that caused the most waiting so far, as "
     "its latest live epoch said, in seconds, with its main cause (none: not late)."},
    {"corenoise_job_live_window_wait_caused_seconds", MetricType::Gauge,
     "A running job's rank on this node among the five that caused the most waiting in its newest "
     "live epoch's window (since the epoch before), in seconds, with its main cause in that window "
     "(none: not late in it)."},
    {"corenoise_job_live_ranks", MetricType::Gauge,
     "Running ranks on this node that sent a live epoch's figures (corenoise job)."},
    {"corenoise_job_live_last_epoch_timestamp_seconds", MetricType::Gauge,
     "When the newest live epoch's figures came from a running rank, in seconds since the Unix "
     "epoch."},
    {"corenoise_job_live_interval_seconds", MetricType::Gauge,
     "The cadence of the newest live epoch's job (corenoise job --live-interval), in seconds."},
    {"corenoise_job_live_ended_total", MetricType::Counter,
     "Ranks that sent live figures and then ended, by how: finalize (their job reported at "
     "MPI_Finalize) or without_finalize (exited without: killed, or ended without it)."},
    {"corenoise_job_reports_refused_total", MetricType::Counter,
     "job-start, job-live, job-culprits and job lines refused since corenoised started, by reason "
     "(docs/control.md, Threat model)."},
};

using Labels = std::initializer_list<std::pair<const char*, std::string_view>>;

class Builder {
 public:
  Builder() {
    families_.resize(kFamilyCount);
    for (std::size_t i = 0; i < kFamilyCount; ++i) {
      families_[i].name = kFamilies[i].name;
      families_[i].help = kFamilies[i].help;
      families_[i].type = kFamilies[i].type;
    }
  }

  // Preallocation matters at 512 PUs: a ClientMetric is a few hundred bytes
  // and regrowing a vector of 5,000 of them costs more than filling it.
  void reserve(Family family, std::size_t series) { families_[family].metric.reserve(series); }

  // Adds one series; a missing or non-finite value adds nothing, so that
  // an absent figure is absent on /metrics too, never a fake zero or NaN.
  void add(Family family, Labels labels, std::optional<double> value) {
    if (!value || !std::isfinite(*value)) return;
    MetricFamily& f = families_[family];
    ClientMetric& m = f.metric.emplace_back();
    m.label.reserve(labels.size());
    for (const auto& [name, label_value] : labels) {
      // Label values name CPUs, probes and modes, and, with tracing, the
      // threads and commands that ran: those come from outside.
      m.label.push_back({name, valid_utf8(label_value)});
    }
    if (f.type == MetricType::Counter) {
      m.counter.value = *value;
    } else {
      m.gauge.value = *value;
    }
  }

  std::vector<MetricFamily> take() && {
    std::erase_if(families_, [](const MetricFamily& f) { return f.metric.empty(); });
    return std::move(families_);
  }

 private:
  std::vector<MetricFamily> families_;
};

std::optional<double> as_double(std::optional<std::uint64_t> v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// Per-mode figures of one measured CPU: each kind's sample duration and
// slowdown under its `probe` label (probe_kinds.h), then the rates.
void add_mode_figures(Builder& b, const std::string& cpu, std::string_view mode,
                      const CoreFigures& c) {
  for (ProbeKind probe : kAllProbeKinds) {
    b.add(kProbeDuration, {{"cpu", cpu}, {"probe", to_string(probe)}, {"mode", mode}},
          sample_seconds(probe, c.figure[probe], c.work[probe]));
  }
  for (ProbeKind probe : kAllProbeKinds) {
    if (!descriptor(probe).slowdown_metric) continue;
    b.add(kSlowdown, {{"cpu", cpu}, {"probe", to_string(probe)}, {"mode", mode}},
          c.slowdown[probe]);
  }
  b.add(kSlowdown, {{"cpu", cpu}, {"probe", to_string(kExpectedRatio)}, {"mode", mode}},
        c.expected_slowdown);
  b.add(kClockHertz, {{"cpu", cpu}, {"mode", mode}}, c.figure[ProbeKind::clock]);
  b.add(kMatmulFlops, {{"cpu", cpu}, {"mode", mode}}, c.matmul_flops_per_second);
  b.add(kMemoryBandwidth, {{"cpu", cpu}, {"mode", mode}}, c.figure[ProbeKind::stream]);
}

void add_ratio_map(Builder& b, Family family, const std::map<ProbeKey, double>& ratios,
                   const std::vector<bool>& measured) {
  for (const auto& [key, ratio] : ratios) {
    if (key.cpu >= measured.size() || !measured[key.cpu]) continue;
    b.add(family,
          {{"cpu", std::to_string(key.cpu)},
           {"probe", to_string(key.probe)},
           {"mode", to_string(key.mode)}},
          ratio);
  }
}

// The culprits of a traced CPU: the largest few by kind and normalised
// name (two kworkers are one series), so that a CPU has at most
// kCulpritsPerCpu series whatever ran on it.
constexpr std::size_t kCulpritsPerCpu = 3;
void add_culprits(Builder& b, const std::string& cpu, const CoreFigures& c) {
  if (c.detour->window_seconds <= 0) return;
  std::map<std::pair<std::string, std::string>, double> seconds;  // (kind, name)
  for (const trace::Culprit& x : c.culprits->culprits)
    seconds[{trace::kind_name(x.kind), trace::label_name(x)}] += x.seconds;
  std::vector<std::pair<std::pair<std::string, std::string>, double>> largest(seconds.begin(),
                                                                              seconds.end());
  std::sort(largest.begin(), largest.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (largest.size() > kCulpritsPerCpu) largest.resize(kCulpritsPerCpu);
  for (const auto& [key, total] : largest) {
    b.add(kCulpritRatio, {{"cpu", cpu}, {"kind", key.first}, {"name", key.second}},
          total / c.detour->window_seconds);
  }
}

// /sys facts. Thermal throttle counters are per core and per package in the
// kernel but repeated on every CPU of it: summing them over CPUs would count
// each event several times, so each core (package) is reported once, on its
// first CPU in topology order.
void add_sys(Builder& b, const Snapshot& s) {
  std::set<unsigned> cores_seen, packages_seen;
  std::vector<unsigned> core_firsts, package_firsts;
  for (const ProcessingUnit& pu : s.report.pus) {
    if (cores_seen.insert(pu.core).second) core_firsts.push_back(pu.cpu);
    if (packages_seen.insert(pu.package).second) package_firsts.push_back(pu.cpu);
  }
  for (unsigned cpu : core_firsts) {
    if (const auto it = s.sys.find(cpu); it != s.sys.end()) {
      b.add(kThermalThrottleTotal, {{"cpu", std::to_string(cpu)}, {"scope", "core"}},
            as_double(it->second.core_throttle_count));
    }
  }
  for (unsigned cpu : package_firsts) {
    if (const auto it = s.sys.find(cpu); it != s.sys.end()) {
      b.add(kThermalThrottleTotal, {{"cpu", std::to_string(cpu)}, {"scope", "package"}},
            as_double(it->second.package_throttle_count));
    }
  }
  for (const auto& [cpu, info] : s.sys) {
    const std::string label = std::to_string(cpu);
    b.add(kCpufreqHertz, {{"cpu", label}, {"type", "current"}}, info.cur_hertz);
    b.add(kCpufreqHertz, {{"cpu", label}, {"type", "max"}}, info.max_hertz);
  }
}

// What jobs reported. They ran whatever the probes measured, so a CPU the
// last round skipped still shows what its jobs lost.
void add_jobs(Builder& b, const JobTotals& jobs) {
  // Served from the start, at 0: one series, and increase() then counts
  // the first report too.
  b.add(kJobReportsTotal, {}, static_cast<double>(jobs.reports));
  b.add(kJobLastReportTimestamp, {}, jobs.last_ended_unix_seconds);
  // A CPU's series appear with the first report that names it, not for
  // every CPU at start: many nodes never run an instrumented job, and seven
  // causes for each of 512 PUs would add ~250 KB of zeros to every scrape.
  // All seven at once, zeros included, so a cause that first costs the CPU
  // something in a later job rises from a sample Prometheus already has.
  for (const auto& [cpu, lost] : jobs.lost_seconds) {
    const std::string label = std::to_string(cpu);
    for (JobCause cause : kJobCauses) {
      b.add(kJobLostSecondsTotal, {{"cpu", label}, {"cause", to_string(cause)}},
            lost[index_of(cause)]);
    }
  }
}

// The running jobs' live figures: a handful of series, whatever the
// node's ranks (JobLiveView holds the worst few).
void add_live_jobs(Builder& b, const JobLiveView& live) {
  b.add(kJobLiveRanks, {}, static_cast<double>(live.ranks));
  const auto add_ranks = [&](Family family, const std::vector<JobLiveRank>& ranks) {
    for (const JobLiveRank& r : ranks) {
      b.add(family,
            {{"rank", std::to_string(r.rank)},
             {"cause", r.cause ? to_string(*r.cause) : std::string_view("none")}},
            r.wait_caused_seconds);
    }
  };
  add_ranks(kJobLiveWaitCausedSeconds, live.worst);
  add_ranks(kJobLiveWindowWaitCausedSeconds, live.window_worst);
  b.add(kJobLiveLastEpochTimestamp, {}, live.last_unix_seconds);
  b.add(kJobLiveIntervalSeconds, {}, live.interval_seconds);
  b.add(kJobLiveEndedTotal, {{"how", "finalize"}}, static_cast<double>(live.ended_with_finalize));
  b.add(kJobLiveEndedTotal, {{"how", "without_finalize"}},
        static_cast<double>(live.ended_without_finalize));
}

void add_process(Builder& b, const Snapshot& s) {
  b.add(kBuildInfo, {{"version", s.version.empty() ? CORENOISE_VERSION : s.version}}, 1.0);
  if (s.started_unix_seconds > 0) b.add(kStartTime, {}, s.started_unix_seconds);
  b.add(kPaused, {}, s.paused ? 1.0 : 0.0);
  for (const auto& [mode, stats] : s.rounds) {
    const std::string_view m = to_string(mode);
    b.add(kRoundTimestamp, {{"mode", m}}, stats.last_unix_seconds);
    b.add(kRoundDuration, {{"mode", m}}, stats.last_duration_seconds);
    b.add(kRoundsTotal, {{"mode", m}}, static_cast<double>(stats.rounds));
  }
  b.add(kClusterPublishTimestamp, {}, s.cluster_published_unix_seconds);
}

// What one walk of the snapshot's CPUs needs: the usable modes, each PU's
// `cpu` label, and which CPUs (by OS index) were measured.
struct CpuWalk {
  std::vector<const ModeReport*> modes;
  std::vector<std::string> labels;
  std::vector<bool> measured;
};

// Only modes whose verdicts line up with the topology (one per PU, same
// CPU) are used: a malformed snapshot loses figures, never mislabels them.
// Skipped CPUs (and all before the first round) get cpu_info and
// core_state only.
CpuWalk walk_of(const NodeReport& report) {
  const auto& pus = report.pus;
  CpuWalk w;
  for (const ModeReport& m : report.modes) {
    const auto& cores = m.verdicts.cores;
    if (cores.size() != pus.size()) continue;
    bool aligned = true;
    for (std::size_t i = 0; i < pus.size() && aligned; ++i) aligned = cores[i].cpu == pus[i].cpu;
    if (aligned) w.modes.push_back(&m);
  }
  w.labels.reserve(pus.size());
  for (std::size_t i = 0; i < pus.size(); ++i) {
    w.labels.push_back(std::to_string(pus[i].cpu));
    if (pus[i].cpu >= w.measured.size()) w.measured.resize(pus[i].cpu + 1, false);
    w.measured[pus[i].cpu] = !w.modes.empty() && report.state(i) != CoreState::skipped;
  }
  return w;
}

void reserve_series(Builder& b, const Snapshot& s, std::size_t n, std::size_t nm) {
  b.reserve(kCpuInfo, n);
  b.reserve(kCoreState, nm > 0 ? n * std::size(kAllCoreStates) : 0);
  b.reserve(kRoundCoreState, nm > 0 ? n * std::size(kAllCoreStates) : 0);
  b.reserve(kCoreUnhealthyRounds, nm > 0 ? n : 0);
  b.reserve(kProbeDuration, kProbeKinds * n * nm);
  b.reserve(kSlowdown, std::size(kAllRatioProbes) * n * nm);
  b.reserve(kClusterSlowdown, s.cluster_slowdown.size());
  b.reserve(kBaselineSlowdown, s.baseline_slowdown.size());
  for (Family f : {kClockHertz, kMatmulFlops, kMemoryBandwidth}) b.reserve(f, n * nm);
  for (Family f :
       {kNoiseRatio, kExcessNoiseRatio, kDetourMax, kDetoursTotal, kDetourSecondsTotal}) {
    b.reserve(f, n);
  }
  b.reserve(kCulpritRatio, kCulpritsPerCpu * n);
}

void add_cpu_info(Builder& b, const std::vector<ProcessingUnit>& pus, const CpuWalk& w) {
  for (std::size_t i = 0; i < pus.size(); ++i) {
    const ProcessingUnit& pu = pus[i];
    b.add(kCpuInfo,
          {{"cpu", w.labels[i]},
           {"core", std::to_string(pu.core)},
           {"package", std::to_string(pu.package)},
           // Empty (the same as no label to Prometheus) where hwloc knows no node.
           {"numa_node", pu.numa_node >= 0 ? std::to_string(pu.numa_node) : std::string()},
           {"kind", pu.kind}},
          1.0);
  }
}

// Before the first round there is no verdict yet: no core_state at all
// rather than every CPU reading "skipped". Both state families take one
// walk each, so that each family's series stay contiguous and in topology
// order.
void add_states(Builder& b, const Snapshot& s, const CpuWalk& w) {
  if (w.modes.empty()) return;
  const std::size_t n = s.report.pus.size();
  std::vector<PersistentVerdict> verdicts;
  verdicts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) verdicts.push_back(verdict_of(s, i));
  for (const auto& [family, persistent] :
       {std::pair{kCoreState, true}, std::pair{kRoundCoreState, false}}) {
    for (std::size_t i = 0; i < n; ++i) {
      const CoreState state = persistent ? verdicts[i].state : verdicts[i].round_state;
      for (CoreState candidate : kAllCoreStates) {
        b.add(family, {{"cpu", w.labels[i]}, {"state", to_string(candidate)}},
              candidate == state ? 1.0 : 0.0);
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    b.add(kCoreUnhealthyRounds, {{"cpu", w.labels[i]}},
          static_cast<double>(verdicts[i].unhealthy_rounds));
  }
}

// Noise without a mode label: the isolated round's where it measured this
// CPU (the core's own noise, the figure verdicts are drawn from), else the
// concurrent round's. report.modes is in run order, isolated first.
void add_noise(Builder& b, const Snapshot& s, const CpuWalk& w) {
  const auto& pus = s.report.pus;
  for (std::size_t i = 0; i < pus.size(); ++i) {
    if (!w.measured[pus[i].cpu]) continue;
    for (const ModeReport* m : w.modes) {
      const CoreFigures& c = m->verdicts.cores[i];
      if (!c.detour || c.detour->window_seconds <= 0) continue;
      b.add(kNoiseRatio, {{"cpu", w.labels[i]}}, c.detour->noise_ratio());
      b.add(kExcessNoiseRatio, {{"cpu", w.labels[i]}}, c.excess_noise);
      b.add(kDetourMax, {{"cpu", w.labels[i]}}, c.detour->max_seconds);
      if (c.culprits) add_culprits(b, w.labels[i], c);
      break;
    }
  }
  for (const auto& [cpu, totals] : s.totals) {
    if (cpu >= w.measured.size() || !w.measured[cpu]) continue;
    const std::string label = std::to_string(cpu);
    b.add(kDetoursTotal, {{"cpu", label}}, static_cast<double>(totals.detours));
    b.add(kDetourSecondsTotal, {{"cpu", label}}, totals.detour_seconds);
  }
}

}  // namespace

std::vector<MetricFamily> collect_metrics(const Snapshot& s) {
  Builder b;
  const auto& pus = s.report.pus;
  add_process(b, s);
  const CpuWalk w = walk_of(s.report);
  reserve_series(b, s, pus.size(), w.modes.size());
  add_cpu_info(b, pus, w);
  add_states(b, s, w);
  for (const ModeReport* m : w.modes) {
    const std::string_view mode = to_string(m->mode);
    for (std::size_t i = 0; i < pus.size(); ++i) {
      if (w.measured[pus[i].cpu]) add_mode_figures(b, w.labels[i], mode, m->verdicts.cores[i]);
    }
  }
  add_ratio_map(b, kClusterSlowdown, s.cluster_slowdown, w.measured);
  add_ratio_map(b, kBaselineSlowdown, s.baseline_slowdown, w.measured);
  add_noise(b, s, w);
  add_sys(b, s);
  add_jobs(b, s.jobs);
  add_live_jobs(b, s.jobs_live);
  return std::move(b).take();
}

std::vector<MetricFamily> collect_live_metrics(const LiveCounts& counts) {
  Builder b;
  // Every reason from the start, at 0: a fixed set of series.
  for (JobRefusal reason : kJobRefusals) {
    b.add(kJobReportsRefusedTotal, {{"reason", to_string(reason)}},
          static_cast<double>(counts.job_refused[index_of(reason)]));
  }
  return std::move(b).take();
}

std::string render_metrics(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

std::string valid_utf8(std::string_view text) {
  // The common case, ASCII, is returned as it is after one pass.
  std::size_t i = 0;
  while (i < text.size() && static_cast<unsigned char>(text[i]) < 0x80) ++i;
  if (i == text.size()) return std::string(text);
  std::string out(text.substr(0, i));
  out.reserve(text.size() + 8);
  while (i < text.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b = byte(i);
    std::size_t length = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (b < 0x80) {
      length = 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      length = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b == 0xe0) lo = 0xa0;  // overlong
      if (b == 0xed) hi = 0x9f;  // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b == 0xf0) lo = 0x90;  // overlong
      if (b == 0xf4) hi = 0x8f;  // above U+10FFFF
    }
    bool ok = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; ok && k < length; ++k) {
      const unsigned char c = byte(i + k);
      ok = k == 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xbf;
    }
    if (ok) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the one byte; resynchronise at the next
      ++i;
    }
  }
  return out;
}

}  // namespace corenoise
