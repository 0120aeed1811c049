// The exporter over real HTTP on loopback: values and labels for known
// inputs, absent figures absent, label values made valid UTF-8, routing,
// bind errors, the docs/metrics.md contract, and `promtool check metrics`
// on what is served. The server's own behaviour (deadlines, the connection
// cap, TLS, basic auth) is exporter_server_test.cpp's.
#include "daemon/exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/report.h"
#include "served_exporter.h"

namespace corenoise {
namespace {

// --- parsing the exposition text ---------------------------------------

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::vector<std::string> families;         // from # TYPE lines, in order
  std::map<std::string, std::string> types;  // family -> type

  // Series of `name` whose labels include all of `match`.
  std::vector<Sample> find(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool ok = true;
      for (const auto& [k, v] : match) {
        const auto it = s.labels.find(k);
        ok = ok && it != s.labels.end() && it->second == v;
      }
      if (ok) out.push_back(s);
    }
    return out;
  }
  // The value of the single series of `name` matching `labels` exactly.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const {
    std::optional<double> found;
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) {
        if (found) ADD_FAILURE() << "duplicate series " << name;
        found = s.value;
      }
    }
    return found;
  }
};

Exposition parse(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name, type;
      f >> name >> type;
      e.families.push_back(name);
      e.types[name] = type;
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;  // past ="
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[key] = value;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::stod(line.substr(i + 1));
    e.samples.push_back(std::move(s));
  }
  return e;
}

// --- snapshots -----------------------------------------------------------

std::vector<ProcessingUnit> four_pus() {
  // Two cores of two PUs on one package; cpu 3's NUMA node is unknown.
  std::vector<ProcessingUnit> pus(4);
  for (unsigned i = 0; i < 4; ++i) {
    pus[i].cpu = i;
    pus[i].core = i / 2;
    pus[i].package = 0;
    pus[i].numa_node = i == 3 ? -1 : 0;
    pus[i].kind = "default";
  }
  return pus;
}

constexpr double kMatmulFlops = 2.0 * 128 * 128 * 128 * 32;
constexpr double kStreamBytes = 24e6;  // 1e6 elements: what stream_bytes = 24e6 gives

DetourResult detour(double window, double lost, std::uint64_t count, double max) {
  DetourResult d;
  d.window_seconds = window;
  d.total_seconds = lost;
  d.count = count;
  d.max_seconds = max;
  return d;
}

CpuSamples samples(unsigned cpu, double matmul, double hertz, std::optional<DetourResult> d,
                   std::optional<double> stream) {
  CpuSamples s;
  s.cpu = cpu;
  s.matmul_seconds = {matmul};
  s.work[ProbeKind::matmul].flops = kMatmulFlops;
  s.samples[ProbeKind::clock] = {hertz};
  if (d) s.detours = {*d};
  if (stream) {
    s.samples[ProbeKind::stream] = {*stream};
    s.work[ProbeKind::stream].bytes = kStreamBytes;
  }
  return s;
}

trace::Culprit culprit(trace::CulpritKind kind, const char* name, int id, double seconds) {
  trace::Culprit c;
  c.kind = kind;
  c.name = name;
  c.id = id;
  c.seconds = seconds;
  return c;
}

// What the tracer charged cpu 1's 11 ms of detours to: two kworkers, which
// are one series, and more culprits than a CPU exports.
trace::Attribution cpu1_culprits() {
  trace::Attribution a;
  a.detour_seconds = 0.011;
  a.culprits = {culprit(trace::CulpritKind::task, "inj", 1234, 0.006),
                culprit(trace::CulpritKind::task, "kworker/1:2", 77, 0.002),
                culprit(trace::CulpritKind::irq, "local_timer", -1, 0.0015),
                culprit(trace::CulpritKind::task, "kworker/u4:0", 78, 0.001),
                culprit(trace::CulpritKind::below_kernel, "", -1, 0.0005)};
  return a;
}

// cpu 0 ok, cpu 1 noisy (traced), cpu 2 slow, cpu 3 not measured. The
// concurrent round ran matmul and clock only.
Snapshot full_snapshot() {
  Snapshot s;
  s.version = "9.8.7-test";
  s.started_unix_seconds = 1700000000;
  s.paused = true;
  s.report.pus = four_pus();
  s.report.settings.stream_bytes = static_cast<std::uint64_t>(kStreamBytes);
  // One sample a figure has no uncertainty: judge the point (alpha 0.5).
  Thresholds thresholds;
  thresholds.alpha = 0.5;

  RoundSamples isolated;
  isolated.mode = Mode::isolated;
  isolated.cpus = {samples(0, 0.002, 3e9, detour(0.1, 0.001, 10, 0.0005), 0.001),
                   samples(1, 0.002, 3e9, detour(0.1, 0.011, 40, 0.002), 0.001),
                   samples(2, 0.003, 3e9, detour(0.1, 0.001, 10, 0.0005), 0.001)};
  isolated.cpus[1].culprits = cpu1_culprits();
  s.report.modes.push_back(make_mode_report(isolated, s.report.pus, thresholds));

  RoundSamples concurrent;
  concurrent.mode = Mode::concurrent;
  concurrent.cpus = {samples(0, 0.004, 2.5e9, std::nullopt, std::nullopt),
                     samples(1, 0.004, 2.5e9, std::nullopt, std::nullopt),
                     samples(2, 0.004, 2.5e9, std::nullopt, std::nullopt)};
  s.report.modes.push_back(make_mode_report(concurrent, s.report.pus, thresholds));

  s.rounds[Mode::isolated] = {5, 1700000100.5, 0.61};
  s.rounds[Mode::concurrent] = {2, 1700000200.25, std::nullopt};
  s.totals[0] = {100, 0.01};
  s.totals[1] = {400, 0.11};
  s.totals[3] = {7, 0.5};  // measured once, skipped now
  s.baseline_slowdown[{0, ratio_probe(ProbeKind::matmul), Mode::isolated}] = 1.02;
  s.baseline_slowdown[{3, ratio_probe(ProbeKind::matmul), Mode::isolated}] = 1.5;
  s.cluster_slowdown[{2, ratio_probe(ProbeKind::matmul), Mode::isolated}] = 1.4;
  s.cluster_slowdown[{2, ratio_probe(ProbeKind::clock), Mode::concurrent}] = 1.1;
  s.cluster_published_unix_seconds = 1700000300;
  s.sys[0] = {11, 22, 2.5e9, 3.5e9};
  s.sys[1] = {11, 22, 2.4e9, 3.5e9};  // same core and package as cpu 0: not counted again
  s.sys[2] = {33, 22, std::nullopt, 3.5e9};
  s.jobs.add(JobRequest{"job-1", 1700000400, 10, 2, {{0, {0.5, 0, 0.25, 0, 0, 0, 1}}}});
  s.jobs_live.worst = {{17, 41.0, JobCause::more_work}, {3, 0.5, std::nullopt}};
  s.jobs_live.window_worst = {{3, 6.5, JobCause::interrupts}};
  s.jobs_live.ranks = 2;
  s.jobs_live.last_unix_seconds = 1700000390;
  s.jobs_live.interval_seconds = 30;
  s.jobs_live.ended_with_finalize = 4;
  return s;
}

struct Served {
  SnapshotStore store;
  ExporterLoop loop;
  std::unique_ptr<Exporter> exporter;
  explicit Served(Snapshot s) {
    store.set(std::make_shared<const Snapshot>(std::move(s)));
    exporter = std::make_unique<Exporter>(loop.io, "127.0.0.1:0", store);
    loop.start();
  }
  ~Served() {
    loop.stop();
    exporter.reset();
  }
  HttpResponse get(const std::string& path = "/metrics") {
    return http(exporter->port(), "GET", path);
  }
  Exposition scrape() {
    const HttpResponse r = get();
    EXPECT_EQ(r.status, 200) << r.body;
    return parse(r.body);
  }
};

using L = std::map<std::string, std::string>;

// --- tests -----------------------------------------------------------------

TEST(ExporterTest, ServesKnownValuesWithTheirLabels) {
  Served served(full_snapshot());
  ASSERT_GT(served.exporter->port(), 0);
  const HttpResponse r = served.get();
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers.find("content-type: text/plain"), std::string::npos) << r.headers;
  const Exposition e = parse(r.body);

  EXPECT_EQ(e.value("corenoise_build_info", {{"version", "9.8.7-test"}}), 1.0);
  EXPECT_EQ(e.value("corenoise_start_time_seconds"), 1700000000.0);
  EXPECT_EQ(e.value("corenoise_paused"), 1.0);
  EXPECT_EQ(e.value("corenoise_rounds_total", {{"mode", "isolated"}}), 5.0);
  EXPECT_EQ(e.value("corenoise_rounds_total", {{"mode", "concurrent"}}), 2.0);
  EXPECT_EQ(e.value("corenoise_round_timestamp_seconds", {{"mode", "isolated"}}), 1700000100.5);
  EXPECT_EQ(e.value("corenoise_round_duration_seconds", {{"mode", "isolated"}}), 0.61);
  EXPECT_EQ(e.value("corenoise_cluster_publish_timestamp_seconds"), 1700000300.0);
  EXPECT_EQ(e.types.at("corenoise_rounds_total"), "counter");
  EXPECT_EQ(e.types.at("corenoise_detours_total"), "counter");
  EXPECT_EQ(e.types.at("corenoise_slowdown_ratio"), "gauge");

  EXPECT_EQ(
      e.value(
          "corenoise_cpu_info",
          {{"cpu", "2"}, {"core", "1"}, {"package", "0"}, {"numa_node", "0"}, {"kind", "default"}}),
      1.0);
  // Unknown NUMA node: an empty label, which Prometheus reads as no label.
  ASSERT_EQ(e.find("corenoise_cpu_info", {{"cpu", "3"}}).size(), 1u);
  EXPECT_EQ(e.find("corenoise_cpu_info", {{"cpu", "3"}})[0].labels.at("numa_node"), "");

  const L iso0 = {{"cpu", "0"}, {"mode", "isolated"}};
  EXPECT_DOUBLE_EQ(*e.value("corenoise_clock_hertz", iso0), 3e9);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_clock_hertz", {{"cpu", "0"}, {"mode", "concurrent"}}),
                   2.5e9);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_matmul_flops_per_second", iso0), kMatmulFlops / 0.002);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_memory_bandwidth_bytes_per_second", iso0), 24e9);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_probe_duration_seconds",
                            {{"cpu", "0"}, {"probe", "matmul"}, {"mode", "isolated"}}),
                   0.002);
  // One triad pass: the buffer bytes over the bandwidth, i.e. the pass time.
  EXPECT_NEAR(*e.value("corenoise_probe_duration_seconds",
                       {{"cpu", "0"}, {"probe", "stream"}, {"mode", "isolated"}}),
              0.001, 1e-12);

  const auto slowdown = [&](const char* cpu, const char* probe, const char* mode) {
    return e.value("corenoise_slowdown_ratio", {{"cpu", cpu}, {"probe", probe}, {"mode", mode}});
  };
  EXPECT_DOUBLE_EQ(*slowdown("2", "matmul", "isolated"), 1.5);
  EXPECT_DOUBLE_EQ(*slowdown("2", "expected", "isolated"), 1.5);
  EXPECT_DOUBLE_EQ(*slowdown("0", "clock", "isolated"), 1.0);
  EXPECT_DOUBLE_EQ(*slowdown("0", "stream", "isolated"), 1.0);
  // cpu 1 loses 11 % against a reference of 1 %: noise factor 0.99 / 0.89.
  EXPECT_FALSE(slowdown("1", "detour", "isolated")) << "the noise factor is expected / matmul";
  EXPECT_DOUBLE_EQ(*slowdown("1", "expected", "isolated"), 0.99 / 0.89);
  EXPECT_DOUBLE_EQ(*slowdown("1", "matmul", "concurrent"), 1.0);

  EXPECT_DOUBLE_EQ(*e.value("corenoise_noise_ratio", {{"cpu", "1"}}), 0.11);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_excess_noise_ratio", {{"cpu", "1"}}), 0.10);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_detour_max_seconds", {{"cpu", "1"}}), 0.002);
  EXPECT_EQ(e.value("corenoise_detours_total", {{"cpu", "1"}}), 400.0);
  EXPECT_EQ(e.value("corenoise_detour_seconds_total", {{"cpu", "1"}}), 0.11);

  // The traced CPU's largest three culprits, kworkers as one, pids left out.
  EXPECT_DOUBLE_EQ(
      *e.value("corenoise_culprit_ratio", {{"cpu", "1"}, {"kind", "task"}, {"name", "inj"}}), 0.06);
  EXPECT_DOUBLE_EQ(
      *e.value("corenoise_culprit_ratio", {{"cpu", "1"}, {"kind", "task"}, {"name", "kworker"}}),
      0.03);
  EXPECT_DOUBLE_EQ(
      *e.value("corenoise_culprit_ratio", {{"cpu", "1"}, {"kind", "irq"}, {"name", "local_timer"}}),
      0.015);
  EXPECT_FALSE(e.value("corenoise_culprit_ratio",
                       {{"cpu", "1"}, {"kind", "below_kernel"}, {"name", "below_kernel"}}))
      << "a fourth culprit is not exported";
  EXPECT_FALSE(e.value("corenoise_culprit_ratio",
                       {{"cpu", "0"}, {"kind", "below_kernel"}, {"name", "below_kernel"}}))
      << "an untraced CPU exports no culprit";

  EXPECT_EQ(e.value("corenoise_baseline_slowdown_ratio",
                    {{"cpu", "0"}, {"probe", "matmul"}, {"mode", "isolated"}}),
            1.02);
  EXPECT_EQ(e.value("corenoise_cluster_slowdown_ratio",
                    {{"cpu", "2"}, {"probe", "clock"}, {"mode", "concurrent"}}),
            1.1);

  // Throttle counters once per core and once per package, on its first CPU.
  EXPECT_EQ(e.value("corenoise_thermal_throttle_events_total", {{"cpu", "0"}, {"scope", "core"}}),
            11.0);
  EXPECT_EQ(e.value("corenoise_thermal_throttle_events_total", {{"cpu", "2"}, {"scope", "core"}}),
            33.0);
  EXPECT_EQ(
      e.value("corenoise_thermal_throttle_events_total", {{"cpu", "0"}, {"scope", "package"}}),
      22.0);
  EXPECT_EQ(e.find("corenoise_thermal_throttle_events_total").size(), 3u);
  EXPECT_EQ(e.value("corenoise_cpufreq_hertz", {{"cpu", "1"}, {"type", "current"}}), 2.4e9);
  EXPECT_EQ(e.value("corenoise_cpufreq_hertz", {{"cpu", "2"}, {"type", "max"}}), 3.5e9);
}

TEST(ExporterTest, LabelValuesAreValidUtf8) {
  EXPECT_EQ(valid_utf8("kworker/1:2"), "kworker/1:2");
  const std::string good = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(valid_utf8(good), good);  // kept as they are
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(valid_utf8("a\xff"
                       "b"),
            "a" + fffd + "b");
  EXPECT_EQ(valid_utf8("caf\xc3"), "caf" + fffd);                        // cut short
  EXPECT_EQ(valid_utf8("\xc0\xaf"), fffd + fffd);                        // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), fffd + fffd + fffd);             // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(valid_utf8("\xe2\x82"
                       "x"),
            fffd + fffd + "x");

  // A traced culprit whose name is not UTF-8 (a thread may name itself
  // with any bytes) is served with the bytes replaced.
  Snapshot s = full_snapshot();
  for (ModeReport& mode : s.report.modes) {
    for (CoreFigures& core : mode.verdicts.cores) {
      if (!core.culprits) continue;
      for (trace::Culprit& c : core.culprits->culprits) {
        if (c.name == "inj") c.name = "inj\xff\xfe";
      }
    }
  }
  Served served(std::move(s));
  const HttpResponse r = served.get();
  const Exposition e = parse(r.body);
  EXPECT_TRUE(e.value("corenoise_culprit_ratio",
                      {{"cpu", "1"}, {"kind", "task"}, {"name", "inj" + fffd + fffd}}))
      << r.body;
}

TEST(ExporterTest, ExactlyOneStatePerCpu) {
  Served served(full_snapshot());
  const Exposition e = served.scrape();
  const std::map<std::string, std::string> expected = {
      {"0", "ok"}, {"1", "noisy"}, {"2", "slow"}, {"3", "skipped"}};
  for (const auto& [cpu, state] : expected) {
    const auto series = e.find("corenoise_core_state", {{"cpu", cpu}});
    ASSERT_EQ(series.size(), std::size(kAllCoreStates)) << "cpu " << cpu;
    int ones = 0;
    for (const Sample& s : series) {
      EXPECT_TRUE(s.value == 0 || s.value == 1);
      if (s.value == 1) {
        ++ones;
        EXPECT_EQ(s.labels.at("state"), state) << "cpu " << cpu;
      }
    }
    EXPECT_EQ(ones, 1) << "cpu " << cpu;
  }
}

// The value of the one series of `family` for `cpu` that is 1, or "" if not
// exactly one is.
std::string one_state(const Exposition& e, const std::string& family, const std::string& cpu) {
  std::string state;
  int ones = 0;
  for (const Sample& s : e.find(family, {{"cpu", cpu}})) {
    if (s.value == 1) {
      ++ones;
      state = s.labels.at("state");
    }
  }
  return ones == 1 ? state : "";
}

// corenoise_core_state is the persistent state, corenoise_round_core_state
// the round's own, corenoise_core_unhealthy_rounds the k of k-of-n; without
// a history entry (cpu 0 here) all three follow the round.
TEST(ExporterTest, PersistentAndRoundStatesApart) {
  Snapshot snapshot = full_snapshot();
  PersistentVerdict transient;  // cpu 1: noisy in this round alone
  transient.state = CoreState::transient;
  transient.round_state = CoreState::noisy;
  transient.unhealthy_rounds = 1;
  transient.rounds = 3;
  snapshot.persistence[1] = transient;
  PersistentVerdict persistent;  // cpu 2: slow in two of three, ok now
  persistent.state = CoreState::slow;
  persistent.round_state = CoreState::ok;
  persistent.unhealthy_rounds = 2;
  persistent.rounds = 3;
  snapshot.persistence[2] = persistent;
  Served served(std::move(snapshot));
  const Exposition e = served.scrape();
  EXPECT_EQ(one_state(e, "corenoise_core_state", "1"), "transient");
  EXPECT_EQ(one_state(e, "corenoise_round_core_state", "1"), "noisy");
  EXPECT_EQ(e.value("corenoise_core_unhealthy_rounds", {{"cpu", "1"}}), 1.0);
  EXPECT_EQ(one_state(e, "corenoise_core_state", "2"), "slow");
  EXPECT_EQ(one_state(e, "corenoise_round_core_state", "2"), "ok");
  EXPECT_EQ(e.value("corenoise_core_unhealthy_rounds", {{"cpu", "2"}}), 2.0);
  EXPECT_EQ(one_state(e, "corenoise_core_state", "0"), "ok");
  EXPECT_EQ(one_state(e, "corenoise_round_core_state", "0"), "ok");
  EXPECT_EQ(e.value("corenoise_core_unhealthy_rounds", {{"cpu", "0"}}), 0.0);
  EXPECT_EQ(e.find("corenoise_round_core_state").size(), 4 * std::size(kAllCoreStates));
}

TEST(ExporterTest, AbsentFiguresAreAbsent) {
  Served served(full_snapshot());
  const Exposition e = served.scrape();
  // The concurrent round ran no stream or detour probe; the clock probe has
  // no duration; a round duration that is unknown is not zero.
  EXPECT_TRUE(
      e.find("corenoise_memory_bandwidth_bytes_per_second", {{"mode", "concurrent"}}).empty());
  EXPECT_TRUE(
      e.find("corenoise_probe_duration_seconds", {{"probe", "stream"}, {"mode", "concurrent"}})
          .empty());
  EXPECT_TRUE(
      e.find("corenoise_slowdown_ratio", {{"probe", "stream"}, {"mode", "concurrent"}}).empty());
  EXPECT_TRUE(e.find("corenoise_probe_duration_seconds", {{"probe", "clock"}}).empty());
  EXPECT_FALSE(e.value("corenoise_round_duration_seconds", {{"mode", "concurrent"}}));
  EXPECT_FALSE(e.value("corenoise_cpufreq_hertz", {{"cpu", "2"}, {"type", "current"}}));
  // The skipped CPU: cpu_info and its verdicts only, even where the snapshot
  // holds older totals or a baseline ratio for it.
  std::set<std::string> names;
  for (const Sample& s : e.samples) {
    const auto it = s.labels.find("cpu");
    if (it != s.labels.end() && it->second == "3") names.insert(s.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"corenoise_cpu_info", "corenoise_core_state",
                                          "corenoise_round_core_state",
                                          "corenoise_core_unhealthy_rounds"}));
  // No NaN or Inf in ours (prometheus-cpp's summary has NaN quantiles until
  // its first observation).
  for (const Sample& s : e.samples) {
    if (s.name.rfind("corenoise_", 0) == 0) {
      EXPECT_TRUE(std::isfinite(s.value)) << s.name;
    }
  }
}

// Two jobs' reports, summed: a CPU's seven causes appear together with the
// first report that names it (zeros included) and only then; the skipped
// CPU 3 shows what its jobs lost, since jobs run whatever the probes did.
TEST(ExporterTest, JobLossesAfterTwoReports) {
  Snapshot s = full_snapshot();
  s.jobs = {};
  s.jobs.add(JobRequest{"slurm-1",
                        1700000500,
                        20,
                        4,
                        {{1, {0.5, 0.25, 0, 0, 0, 0, 2}}, {3, {0, 0, 0, 1.5, 0, 0, 0}}}});
  s.jobs.add(
      JobRequest{"slurm-2", 1700000450.5, 8, 2, {{1, {0.25, 0, 0.125, 0, 0, 0, 1}}, {2, {}}}});
  Served served(std::move(s));
  const Exposition e = served.scrape();
  EXPECT_EQ(e.types.at("corenoise_job_lost_seconds_total"), "counter");
  EXPECT_EQ(e.types.at("corenoise_job_reports_total"), "counter");
  EXPECT_EQ(e.types.at("corenoise_job_last_report_timestamp_seconds"), "gauge");
  EXPECT_EQ(e.value("corenoise_job_reports_total"), 2.0);
  EXPECT_EQ(e.types.at("corenoise_job_reports_refused_total"), "counter");
  for (JobRefusal reason : kJobRefusals) {
    EXPECT_EQ(e.value("corenoise_job_reports_refused_total",
                      {{"reason", std::string(to_string(reason))}}),
              0.0);
  }
  // The latest report's end, though the first ended later.
  EXPECT_EQ(e.value("corenoise_job_last_report_timestamp_seconds"), 1700000450.5);

  const auto lost = [&](const char* cpu, const char* cause) {
    return e.value("corenoise_job_lost_seconds_total", {{"cpu", cpu}, {"cause", cause}});
  };
  EXPECT_EQ(lost("1", "own-threads"), 0.75);
  EXPECT_EQ(lost("1", "other-processes"), 0.25);
  EXPECT_EQ(lost("1", "interrupts"), 0.125);
  EXPECT_EQ(lost("1", "more-work"), 3.0);
  EXPECT_EQ(lost("1", "steal"), 0.0);
  EXPECT_EQ(lost("3", "steal"), 1.5);
  EXPECT_EQ(lost("2", "slower-clock"), 0.0);
  EXPECT_FALSE(lost("0", "own-threads")) << "cpu 0 was in no report";

  // Seven series for each CPU a report named (1, 2, 3), in CPU order, one per cause.
  std::vector<std::pair<std::string, std::string>> series;
  for (const Sample& x : e.find("corenoise_job_lost_seconds_total")) {
    series.emplace_back(x.labels.at("cpu"), x.labels.at("cause"));
    EXPECT_EQ(x.labels.size(), 2u);
  }
  std::vector<std::pair<std::string, std::string>> expected;
  for (const char* cpu : {"1", "2", "3"}) {
    for (JobCause cause : kJobCauses) expected.emplace_back(cpu, to_string(cause));
  }
  EXPECT_EQ(series, expected);
}

// Refused reports are counted by reason and add nothing else. They are
// counted beside the snapshot: a refusal shows on the next scrape with no
// new snapshot made (a user's flood of refused lines rebuilds nothing).
TEST(ExporterTest, RefusedJobReportsByReasonWithoutANewSnapshot) {
  Snapshot s = full_snapshot();
  s.jobs = {};
  Served served(std::move(s));
  const SnapshotPtr snapshot = served.store.get();
  for (int i = 0; i < 3; ++i) served.store.live().count_job_refusal(JobRefusal::unregistered);
  const Exposition before = served.scrape();
  EXPECT_EQ(before.value("corenoise_job_reports_refused_total", {{"reason", "unregistered"}}), 3.0);
  EXPECT_EQ(before.value("corenoise_job_reports_refused_total", {{"reason", "duplicate"}}), 0.0);

  served.store.live().count_job_refusal(JobRefusal::duplicate);
  const Exposition e = served.scrape();
  EXPECT_EQ(served.store.get(), snapshot);
  std::vector<std::string> reasons;
  for (const Sample& x : e.find("corenoise_job_reports_refused_total")) {
    EXPECT_EQ(x.labels.size(), 1u);
    reasons.push_back(x.labels.at("reason"));
  }
  std::vector<std::string> expected;
  for (JobRefusal r : kJobRefusals) expected.emplace_back(to_string(r));
  EXPECT_EQ(reasons, expected);
  EXPECT_EQ(e.value("corenoise_job_reports_refused_total", {{"reason", "unregistered"}}), 3.0);
  EXPECT_EQ(e.value("corenoise_job_reports_refused_total", {{"reason", "duplicate"}}), 1.0);
  EXPECT_EQ(e.value("corenoise_job_reports_refused_total", {{"reason", "invalid"}}), 0.0);
  EXPECT_EQ(e.value("corenoise_job_reports_total"), 0.0);
  EXPECT_TRUE(e.find("corenoise_job_lost_seconds_total").empty());
  // The rest of the page is the snapshot's, as before the refusal.
  EXPECT_EQ(e.find("corenoise_cpu_info").size(), before.find("corenoise_cpu_info").size());
  EXPECT_EQ(e.types.at("corenoise_job_reports_refused_total"), "counter");
}

TEST(ExporterTest, BeforeTheFirstRoundOnlyNodeMetricsAndCpuInfo) {
  Snapshot s;
  s.version = "1.0";
  s.started_unix_seconds = 1700000000;
  s.report.pus = four_pus();
  Served served(std::move(s));
  const Exposition e = served.scrape();
  std::set<std::string> names;
  for (const Sample& sample : e.samples) {
    if (sample.name.rfind("corenoise_", 0) == 0) names.insert(sample.name);
  }
  // The counts of job reports, taken and refused, and of live ranks and
  // their ends, are there from the start, at 0, so that increase() counts
  // the first report.
  EXPECT_EQ(names, (std::set<std::string>{
                       "corenoise_build_info", "corenoise_start_time_seconds", "corenoise_paused",
                       "corenoise_cpu_info", "corenoise_job_reports_total",
                       "corenoise_job_reports_refused_total", "corenoise_job_live_ranks",
                       "corenoise_job_live_ended_total"}));
  EXPECT_EQ(e.value("corenoise_job_reports_total"), 0.0);
  EXPECT_EQ(e.find("corenoise_job_reports_refused_total").size(), kJobRefusalCount);
  for (JobRefusal reason : kJobRefusals) {
    EXPECT_EQ(e.value("corenoise_job_reports_refused_total",
                      {{"reason", std::string(to_string(reason))}}),
              0.0);
  }
  EXPECT_EQ(e.value("corenoise_paused"), 0.0);
  EXPECT_EQ(e.find("corenoise_cpu_info").size(), 4u);
}

TEST(ExporterTest, NoiseFallsBackToTheConcurrentRound) {
  Snapshot s;
  s.report.pus = four_pus();
  RoundSamples concurrent;
  concurrent.mode = Mode::concurrent;
  concurrent.cpus = {samples(0, 0.002, 3e9, detour(0.1, 0.002, 5, 0.001), std::nullopt),
                     samples(1, 0.002, 3e9, detour(0.1, 0.004, 5, 0.001), std::nullopt)};
  s.report.modes.push_back(make_mode_report(concurrent, s.report.pus, Thresholds{}));
  const Exposition e = parse(render_metrics(collect_metrics(s)));
  EXPECT_DOUBLE_EQ(*e.value("corenoise_noise_ratio", {{"cpu", "0"}}), 0.02);
  EXPECT_DOUBLE_EQ(*e.value("corenoise_noise_ratio", {{"cpu", "1"}}), 0.04);
  EXPECT_FALSE(e.value("corenoise_noise_ratio", {{"cpu", "2"}}));
  // Without a version in the snapshot, the build's.
  EXPECT_EQ(e.value("corenoise_build_info", {{"version", CORENOISE_VERSION}}), 1.0);
  // Not published yet, no start time: absent, not zero.
  EXPECT_TRUE(e.find("corenoise_cluster_publish_timestamp_seconds").empty());
  EXPECT_TRUE(e.find("corenoise_start_time_seconds").empty());
}

TEST(ExporterTest, StableOrder) {
  const Snapshot s = full_snapshot();
  const std::string a = render_metrics(collect_metrics(s));
  EXPECT_EQ(a, render_metrics(collect_metrics(s)));
  const Exposition e = parse(a);
  // Families in a fixed order; within one, CPUs in topology order.
  EXPECT_EQ(e.families.front(), "corenoise_build_info");
  std::vector<std::string> cpus;
  for (const Sample& x : e.find("corenoise_cpu_info")) cpus.push_back(x.labels.at("cpu"));
  EXPECT_EQ(cpus, (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(ExporterTest, ServesTheCurrentSnapshot) {
  Served served(full_snapshot());
  EXPECT_EQ(served.scrape().value("corenoise_paused"), 1.0);
  Snapshot next = full_snapshot();
  next.paused = false;
  served.store.set(std::make_shared<const Snapshot>(std::move(next)));
  EXPECT_EQ(served.scrape().value("corenoise_paused"), 0.0);
}

std::string docs_path() { return std::string(CORENOISE_FIXTURES) + "/../../docs/metrics.md"; }

// The names docs/metrics.md lists in its tables ("| `name` | type | ...").
std::set<std::string> documented_metrics() {
  std::ifstream in(docs_path());
  EXPECT_TRUE(in) << "cannot read " << docs_path();
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::size_t end = line.find('`', 3);
    names.insert(line.substr(3, end - 3));
  }
  return names;
}

TEST(ExporterTest, EveryMetricIsDocumentedAndEveryDocumentedMetricIsEmitted) {
  Served served(full_snapshot());
  const Exposition e = served.scrape();
  const std::set<std::string> documented = documented_metrics();
  const std::set<std::string> emitted(e.families.begin(), e.families.end());
  for (const std::string& name : emitted) {
    EXPECT_TRUE(documented.count(name)) << name << " is served but not in docs/metrics.md";
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(emitted.count(name)) << name
                                     << " is in docs/metrics.md but a full snapshot "
                                        "does not emit it";
  }
  for (const Sample& s : e.samples) {
    bool known = false;
    for (const std::string& family : emitted) {
      known = known || s.name == family || s.name == family + "_sum" || s.name == family + "_count";
    }
    EXPECT_TRUE(known) << s.name << " has no # TYPE line";
  }
}

TEST(ExporterTest, PassesPromtoolCheckMetrics) {
  Served served(full_snapshot());
  served.get();
  const std::string text = served.get().body;
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("corenoise_exporter_test_" + std::to_string(::getpid()) + ".prom");
  std::ofstream(file) << text;
  // promtool is a hard requirement of this test (CI installs Debian's
  // `prometheus` package): a missing promtool fails here, exit status 127.
  const std::string command = "promtool check metrics < '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = ::pclose(pipe);
  std::filesystem::remove(file);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "promtool check metrics (127: promtool not installed; "
                                       "apt-get install prometheus):\n"
                                    << output;
}

TEST(ExporterTest, LandingPageLinksMetricsAndNamesTheVersion) {
  Served served(full_snapshot());
  const HttpResponse r = served.get("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.headers.find("content-type: text/html"), std::string::npos) << r.headers;
  EXPECT_NE(r.body.find("href=\"metrics\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(CORENOISE_VERSION), std::string::npos) << r.body;

  const HttpResponse head = http(served.exporter->port(), "HEAD", "/");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  const HttpResponse head_metrics = http(served.exporter->port(), "HEAD", "/metrics");
  EXPECT_EQ(head_metrics.status, 200);
  EXPECT_TRUE(head_metrics.body.empty());
}

TEST(ExporterTest, RefusesOtherMethodsAndPaths) {
  Served served(full_snapshot());
  const int port = served.exporter->port();
  const HttpResponse post = http(port, "POST", "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.headers.find("allow: get, head"), std::string::npos) << post.headers;
  EXPECT_EQ(post.body.find("corenoise_"), std::string::npos);
  EXPECT_EQ(http(port, "PUT", "/").status, 405);
  EXPECT_EQ(http(port, "DELETE", "/metrics").status, 405);
  EXPECT_EQ(http(port, "OPTIONS", "/metrics").status, 405);
  EXPECT_EQ(http(port, "GET", "/nope").status, 404);
  EXPECT_EQ(http(port, "GET", "/metrics/extra").status, 404);
  EXPECT_EQ(http(port, "GET", "/index.html").status, 404);
  EXPECT_EQ(http(port, "POST", "/nope").status, 404);
  // Still serving after refusals.
  EXPECT_EQ(served.get().status, 200);
}

std::string construction_error(const std::string& listen) {
  SnapshotStore store;
  boost::asio::io_context io;
  try {
    Exporter exporter(io, listen, store);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ExporterTest, TakenPortThrowsNamingTheAddress) {
  Served first(full_snapshot());
  const std::string address = "127.0.0.1:" + std::to_string(first.exporter->port());
  const std::string message = construction_error(address);
  EXPECT_NE(message.find("cannot listen on " + address), std::string::npos) << message;
  EXPECT_NE(message.find("in use"), std::string::npos) << message;
  // The first one still serves.
  EXPECT_EQ(first.get("/").status, 200);
}

TEST(ExporterTest, BadAddressesThrowNamingTheAddress) {
  for (const std::string bad :
       {"nonsense", "127.0.0.1", ":9847", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:80s",
        "::1:9847", "[::1:9847", "[nonsense]:0", "[127.0.0.1]:0", "127.0.0.1:1,127.0.0.1:2",
        "999.1.1.1:0", "no-such-host.invalid:0"}) {
    const std::string message = construction_error(bad);
    EXPECT_NE(message.find("cannot listen on " + bad + ": "), std::string::npos)
        << bad << " -> " << message;
  }
}

}  // namespace
}  // namespace corenoise
