// The probe descriptor (probe/probe_kinds.h) and every layer that picks the
// kinds up from it. Each test loops over kAllProbeKinds and names no kind
// but where a kind's own summary (matmul, detour) needs its own samples:
// a kind added to the descriptor is checked here with no edit, from its
// kernel through the analysis, the samples codec, the JSON, the text table,
// the cluster histograms and the sweep summary, the page, the exporter and
// the calibration store.
#include "probe/probe_kinds.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "collector/cluster/cluster_report.h"
#include "collector/cluster/cluster_stats.h"
#include "collector/report/report_page.h"
#include "collector/report/sweep_summary.h"
#include "collector/report/table.h"
#include "collector/report/web_assets.h"
#include "daemon/calibration_store.h"
#include "daemon/exporter.h"
#include "probe/analysis.h"
#include "probe/report.h"
#include "probe/report_json.h"
#include "probe/runner.h"
#include "probe/samples_codec.h"
#include "probe/settings.h"
#include "probe/topology.h"

namespace corenoise {
namespace {

constexpr double kWork = 1e6;  // of every kind's run, in its work unit

// A value of `kind`'s samples: `slower` × the reference core's, where the
// reference core has slower = 1 (a time and a share grow, a rate shrinks).
double sample_value(ProbeKind kind, double slower) {
  const ProbeDescriptor& d = descriptor(kind);
  if (d.summary == Summary::work_per_median_time) return 1e-3 * slower;  // seconds of kWork
  return d.direction == Direction::rate ? 1e9 / slower : 1e-3 * slower;
}

// One CPU's samples of every kind, `slower` × the reference's.
CpuSamples samples_of(unsigned cpu, double slower) {
  CpuSamples s;
  s.cpu = cpu;
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.work != nullptr) s.work[d.kind].*d.work = kWork;
    if (d.summary != Summary::own) {
      s.samples[d.kind] = {sample_value(d.kind, slower), sample_value(d.kind, slower) * 1.001,
                           sample_value(d.kind, slower) * 0.999};
    }
  }
  s.matmul_seconds = {1e-3 * slower, 1.001e-3 * slower, 0.999e-3 * slower};
  s.work[ProbeKind::matmul].flops = kWork;
  for (double lost : {0.01, 0.0101, 0.0099}) {
    DetourResult window;
    window.window_seconds = 1;
    window.total_seconds = lost * slower;
    window.count = 3;
    window.max_seconds = 1e-4;
    s.detours.push_back(window);
  }
  return s;
}

std::vector<ProcessingUnit> three_pus() {
  std::vector<ProcessingUnit> pus(3);
  for (unsigned i = 0; i < pus.size(); ++i) {
    pus[i].cpu = i;
    pus[i].core = i;
    pus[i].kind = "default";
  }
  return pus;
}

// cpus 0 and 1 alike, cpu 2 twice as slow on every kind.
NodeReport report_of_every_kind() {
  NodeReport r;
  r.pus = three_pus();
  RoundSamples round;
  round.mode = Mode::isolated;
  round.cpus = {samples_of(0, 1), samples_of(1, 1), samples_of(2, 2)};
  Thresholds thresholds;
  thresholds.alpha = 0.5;
  r.modes.push_back(make_mode_report(round, r.pus, thresholds));
  return r;
}

TEST(ProbeKinds, TheDescriptorIsInKindOrderAndNamesAreUnique) {
  for (ProbeKind kind : kAllProbeKinds) {
    const ProbeDescriptor& d = descriptor(kind);
    EXPECT_EQ(d.kind, kind);
    EXPECT_EQ(probe_kind_named(d.name), kind);
    EXPECT_FALSE(d.figure_name.empty());
    for (ProbeKind other : kAllProbeKinds) {
      if (other != kind) {
        EXPECT_NE(descriptor(other).figure_name, d.figure_name);
      }
    }
  }
  EXPECT_EQ(to_string(kExpectedRatio), "expected");
  EXPECT_EQ(kAllRatioProbes[std::size(kAllRatioProbes) - 1], kExpectedRatio);
}

TEST(ProbeKinds, OneSlowdownForEveryDirection) {
  const auto slowdown = [](std::optional<double> reference, Direction direction, double figure) {
    return Reference{reference, direction}.slowdown(figure);
  };
  EXPECT_DOUBLE_EQ(*slowdown(2.0, Direction::time, 3.0), 1.5);
  EXPECT_DOUBLE_EQ(*slowdown(3.0, Direction::rate, 2.0), 1.5);
  EXPECT_DOUBLE_EQ(*slowdown(0.2, Direction::share, 0.6), 2.0);
  EXPECT_FALSE(slowdown(0.0, Direction::time, 1.0));
  EXPECT_FALSE(slowdown(1.0, Direction::rate, 0.0));
  EXPECT_FALSE(slowdown(0.1, Direction::share, 1.0));
  EXPECT_FALSE(slowdown(std::nullopt, Direction::time, 1.0));
}

TEST(ProbeKinds, SettingsRunTheDefaultKindsAndAcceptEachName) {
  const ProbeSettings defaults;
  for (ProbeKind kind : kAllProbeKinds) {
    EXPECT_EQ(defaults.runs(kind), descriptor(kind).by_default) << to_string(kind);
    ProbeSettings s;
    find_probe_option("probes")->apply(s, to_string(kind));
    EXPECT_EQ(s.probes, std::vector<ProbeKind>{kind});
  }
}

// Every kernel the runner drives through its descriptor samples a
// positive figure on this machine, and says its work.
TEST(ProbeKinds, EveryDrivenKernelSamples) {
  ProbeSettings settings;
  settings.stream_bytes = 1 << 20;
  ProcessingUnit pu;
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.make_kernel == nullptr) continue;
    auto kernel = d.make_kernel(settings, pu);
    const double sample = kernel->sample();
    EXPECT_TRUE(std::isfinite(sample) && sample > 0) << d.name;
    if (d.work != nullptr) {
      EXPECT_GT(kernel->work().*d.work, 0) << d.name;
    }
  }
}

TEST(ProbeKinds, TheAnalysisJudgesEveryKindAgainstItsReference) {
  const NodeReport r = report_of_every_kind();
  const auto& cores = r.modes[0].verdicts.cores;
  for (ProbeKind kind : kAllProbeKinds) {
    ASSERT_TRUE(cores[2].figure[kind]) << to_string(kind);
    ASSERT_TRUE(cores[2].slowdown[kind]) << to_string(kind);
    EXPECT_GT(*cores[2].slowdown[kind], 1.0) << to_string(kind);
    EXPECT_NEAR(*cores[0].slowdown[kind], 1.0, 1e-9) << to_string(kind);
  }
}

TEST(ProbeKinds, TheSamplesCodecKeepsEveryKind) {
  const CpuSamples s = samples_of(5, 1.5);
  const CpuSamples back = decode_samples(encode_samples(s));
  for (ProbeKind kind : kAllProbeKinds) {
    EXPECT_EQ(back.samples[kind], s.samples[kind]) << to_string(kind);
    EXPECT_EQ(back.work[kind].bytes, s.work[kind].bytes) << to_string(kind);
  }
}

TEST(ProbeKinds, TheJsonCarriesEveryKindAndReadsItBack) {
  const NodeReport r = report_of_every_kind();
  const nlohmann::json j = to_json(r);
  const nlohmann::json& ref = j["rounds"][0]["references"][0];
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    EXPECT_TRUE(ref.contains(std::string(d.figure_name))) << d.name;
    EXPECT_TRUE(j["cpus"][2].contains(std::string(d.name))) << d.name;
  }
  const NodeReport back = node_report_from_json(j);
  for (ProbeKind kind : kAllProbeKinds) {
    EXPECT_EQ(back.modes[0].verdicts.cores[2].figure[kind],
              r.modes[0].verdicts.cores[2].figure[kind])
        << to_string(kind);
  }
}

TEST(ProbeKinds, TheTableHasEveryKindsColumns) {
  std::ostringstream out;
  print_table(out, report_of_every_kind());
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    for (const TableColumn& column : d.columns) {
      if (!column.header.empty()) {
        EXPECT_NE(out.str().find(std::string(column.header)), std::string::npos) << d.name;
      }
    }
  }
}

TEST(ProbeKinds, TheClusterHistogramsAndTheSweepSummaryCountEveryKind) {
  const NodeReport r = report_of_every_kind();
  KindTable kinds = kind_table(r);
  ClusterHistograms h;
  EXPECT_EQ(add_node_figures(h, r, kinds), 0u);
  ClusterReport cluster;
  for (ProbeKind kind : kAllProbeKinds) {
    const LogHistogram figures = h.histogram(figure_metric(kind), Mode::isolated, 0);
    EXPECT_EQ(figures.count(), 3u) << to_string(kind);
    EXPECT_EQ(to_string(figure_metric(kind)), descriptor(kind).figure_name);
    cluster.quantiles.push_back({figure_metric(kind), Mode::isolated, "default", 3, figures.min(),
                                 figures.quantile(0.5), figures.quantile(0.9),
                                 figures.quantile(0.99), figures.max()});
  }
  const ClusterReference reference = cluster_reference(h, Mode::isolated, 0);
  const auto ratios = cluster_ratios(r.modes[0].verdicts.cores[2], reference);
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (!d.slowdown_metric) continue;
    EXPECT_TRUE(std::any_of(ratios.begin(), ratios.end(), [&](const auto& p) {
      return p.first == ratio_probe(d.kind);
    })) << d.name;
  }
  std::ostringstream out;
  print_sweep_summary(out, cluster, 5, false, "sweep");
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    EXPECT_NE(out.str().find(std::string(d.figure_name)), std::string::npos) << d.name;
    EXPECT_NE(out.str().find(" " + std::string(d.display.unit)), std::string::npos) << d.name;
  }
}

// The page shows each kind's quantiles in its unit: the kinds run by
// default are in the embedded script, an opt-in kind's entry is added to a
// page whose report has its figures.
TEST(ProbeKinds, ThePageKnowsEveryKindsUnit) {
  const std::string script(web_assets::kScript);
  EXPECT_EQ(script.find("@@CORENOISE_METRIC_SCALE@@"), std::string::npos);
  nlohmann::json quantiles = nlohmann::json::array();
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    quantiles.push_back({{"metric", d.figure_name}, {"mode", "isolated"}, {"kind", "default"}});
  }
  const std::string page = render_report_page(
      {{"schema", "corenoise-sweep/1"}, {"cluster", {{"quantiles", quantiles}}}});
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    const std::string entry = "    " + std::string(d.figure_name) + ": [" +
                              std::string(d.display.page_scale) + ", \"" +
                              std::string(d.display.unit) + "\"]";
    EXPECT_EQ(script.find(entry) != std::string::npos, d.by_default) << d.name;
    EXPECT_NE(page.find(entry), std::string::npos) << d.name;
  }
}

TEST(ProbeKinds, TheExporterServesEveryKindsSlowdown) {
  Snapshot s;
  s.report = report_of_every_kind();
  const std::string text = render_metrics(collect_metrics(s));
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    const std::string labels =
        "{cpu=\"2\",probe=\"" + std::string(d.name) + "\",mode=\"isolated\"}";
    if (d.slowdown_metric) {
      EXPECT_NE(text.find("corenoise_slowdown_ratio" + labels), std::string::npos) << d.name;
    }
    if (sample_seconds(d.kind, 1.0, KernelWork{kWork, kWork, kWork})) {
      EXPECT_NE(text.find("corenoise_probe_duration_seconds" + labels), std::string::npos)
          << d.name;
    }
  }
}

TEST(ProbeKinds, TheCalibrationStoreKeepsEveryCalibratedKind) {
  const NodeReport r = report_of_every_kind();
  Calibration calibration;
  calibrate_from(calibration, r.modes[0]);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("corenoise-kinds-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CalibrationStore store(dir.string());
  store.save(calibration);
  const auto loaded = store.load();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->cores, calibration.cores);
  // Against cpu 0's calibration, cpu 0 is itself: every calibrated kind's
  // baseline slowdown is 1.
  const auto baseline = baseline_slowdowns(*loaded, r);
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (!d.calibrated || !d.slowdown_metric) continue;
    const auto it = baseline.find({0, ratio_probe(d.kind), Mode::isolated});
    ASSERT_NE(it, baseline.end()) << d.name;
    EXPECT_DOUBLE_EQ(it->second, 1.0) << d.name;
  }
}

// Every kind, opt-in ones too, from --probes through a real round on this
// machine to the JSON, the table and /metrics.
TEST(ProbeKinds, EveryKindRunsThroughARealRound) {
  ProbeSettings settings;
  std::string all;
  for (ProbeKind kind : kAllProbeKinds)
    all += (all.empty() ? "" : ",") + std::string(to_string(kind));
  find_probe_option("probes")->apply(settings, all);
  settings.samples = 3;
  settings.stream_bytes = 4 << 20;
  settings.detour_window_seconds = 0.002;
  const Topology topology = Topology::load("native");
  std::vector<unsigned> cpus;
  for (const auto& pu : topology.pus()) {
    if (pu.usable() && cpus.size() < 2) cpus.push_back(pu.cpu);
  }
  ASSERT_FALSE(cpus.empty());
  const RoundSamples round = Runner(settings, topology).run(Mode::isolated, cpus);
  NodeReport r;
  r.settings = settings;
  r.pus = topology.pus();
  r.modes.push_back(make_mode_report(round, r.pus, settings.thresholds));
  const std::size_t at = static_cast<std::size_t>(
      std::find_if(r.pus.begin(), r.pus.end(),
                   [&](const ProcessingUnit& pu) { return pu.cpu == cpus[0]; }) -
      r.pus.begin());
  const CoreFigures& c = r.modes[0].verdicts.cores.at(at);
  const nlohmann::json j = to_json(r)["cpus"][at];
  Snapshot s;
  s.report = r;
  const std::string metrics = render_metrics(collect_metrics(s));
  std::ostringstream table;
  print_table(table, r);
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    ASSERT_TRUE(c.figure[d.kind]) << d.name;
    EXPECT_TRUE(j.contains(std::string(d.name))) << d.name;
    EXPECT_NE(table.str().find(std::string(d.columns[0].header)), std::string::npos) << d.name;
    if (d.slowdown_metric) {
      EXPECT_NE(metrics.find("probe=\"" + std::string(d.name) + "\""), std::string::npos) << d.name;
    }
  }
  std::cout << table.str();
}

}  // namespace
}  // namespace corenoise
