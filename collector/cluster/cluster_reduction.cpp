#include "collector/cluster/cluster_reduction.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "collector/report/sweep_summary.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

using nlohmann::json;

std::string text_of(const std::vector<std::byte>& blob) {
  return std::string(reinterpret_cast<const char*>(blob.data()), blob.size());
}

template <typename T>
std::span<std::byte> bytes_of(T& value) {
  return std::as_writable_bytes(std::span<T, 1>(&value, 1));
}

void allreduce(MpiEnvironment& env, ClusterHistograms& h, std::size_t first_key, std::size_t keys) {
  env.allreduce_sum(h.counts().subspan(first_key * kHistogramSlots, keys * kHistogramSlots));
  env.allreduce_sum(h.sums().subspan(first_key, keys));
  env.allreduce_min(h.minima().subspan(first_key, keys));
  env.allreduce_max(h.maxima().subspan(first_key, keys));
}

const CoreFigures* figures_of(const NodeReport& report, Mode mode, std::size_t pu_index) {
  for (const auto& m : report.modes) {
    if (m.mode == mode && pu_index < m.verdicts.cores.size()) return &m.verdicts.cores[pu_index];
  }
  return nullptr;
}

std::optional<std::size_t> pu_index(const NodeReport& report, unsigned cpu) {
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    if (report.pus[i].cpu == cpu) return i;
  }
  return std::nullopt;
}

// Every core of this node as heatmap cells (--full), in the deciding mode of
// its state: cpu, state, node- and cluster-relative expected slowdown, cause.
std::string node_cells(const NodeReport& report, std::uint32_t /*node*/, const KindTable& kinds,
                       const ClusterHistograms& reduced) {
  json cells = json::array();
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    json cell = {{"cpu", report.pus[i].cpu}, {"state", to_string(report.state(i))}};
    if (!report.modes.empty()) {
      const ModeReport& mode = report.modes[report.deciding_mode(i)];
      const CoreFigures& core = mode.verdicts.cores[i];
      cell["cause"] = core.cause;
      if (core.expected_slowdown) cell["expected_slowdown"] = *core.expected_slowdown;
      if (const auto slot = kinds.find(core.kind)) {
        const auto s =
            cluster_expected_slowdown(core, cluster_reference(reduced, mode.mode, *slot));
        if (s) cell["cluster_slowdown"] = *s;
      }
    }
    cells.push_back(std::move(cell));
  }
  return cells.dump();
}

NodeCells cells_from_json(std::uint32_t node, const std::string& text) {
  NodeCells cells;
  cells.node = node;
  for (const json& c : json::parse(text)) {
    CoreCell cell;
    cell.cpu = c.at("cpu").get<unsigned>();
    const std::string state = c.at("state").get<std::string>();
    for (CoreState s : kAllCoreStates) {
      if (to_string(s) == state) cell.state = s;
    }
    if (c.contains("expected_slowdown"))
      cell.expected_slowdown = c["expected_slowdown"].get<double>();
    if (c.contains("cluster_slowdown")) cell.cluster_slowdown = c["cluster_slowdown"].get<double>();
    if (c.contains("cause")) cell.cause = c["cause"].get<std::string>();
    cells.cores.push_back(std::move(cell));
  }
  return cells;
}

// This node's part of the final worst list: the cause text and the
// cluster-relative slowdown of each of its cores in it (only the owner has
// the figures; the top-K records carry numbers only).
std::string worst_details(const NodeReport& report, const TopK& top, std::uint32_t node,
                          const KindTable& kinds, const ClusterHistograms& reduced) {
  json details = json::array();
  for (const WorstCore& w : top.cores()) {
    if (w.node != node) continue;
    const auto index = pu_index(report, w.cpu);
    if (!index) continue;
    json entry = {{"cpu", w.cpu}, {"cause", ""}, {"cluster_slowdown", nullptr}};
    if (!report.modes.empty()) {
      const auto& deciding = report.modes[report.deciding_mode(*index)];
      entry["cause"] = deciding.verdicts.cores[*index].cause;
    }
    const Mode mode = static_cast<Mode>(w.mode);
    const CoreFigures* core = figures_of(report, mode, *index);
    if (core != nullptr) {
      if (const auto slot = kinds.find(core->kind)) {
        const auto s = cluster_expected_slowdown(*core, cluster_reference(reduced, mode, *slot));
        if (s) entry["cluster_slowdown"] = *s;
      }
    }
    details.push_back(entry);
  }
  return details.dump();
}

std::vector<MetricQuantiles> cluster_quantiles(const ClusterHistograms& h, const KindTable& kinds,
                                               const std::vector<Mode>& modes) {
  std::vector<MetricQuantiles> out;
  auto add = [&](Metric metric, Mode mode, const std::string& kind, const LogHistogram& hist) {
    if (hist.count() == 0) return;
    out.push_back({metric, mode, kind, hist.count(), hist.min(), hist.quantile(0.5),
                   hist.quantile(0.9), hist.quantile(0.99), hist.max()});
  };
  for (Mode mode : modes) {
    // Ratios are already relative to their kind, so all kinds pool.
    for (Metric metric : {Metric::expected_slowdown, Metric::cluster_slowdown}) {
      add(metric, mode, "all", h.all_kinds(metric, mode));
    }
    for (Metric metric : {Metric::matmul_seconds, Metric::clock_hertz, Metric::noise_ratio,
                          Metric::stream_bytes_per_second}) {
      for (std::size_t k = 0; k < kinds.size; ++k) {
        add(metric, mode, std::string(kinds.name(k)), h.histogram(metric, mode, k));
      }
    }
  }
  return out;
}

// The barrier wait from the cluster-relative slowdowns of the mode a full
// MPI job runs in (concurrent if it ran). The step is the cluster reference
// core's matmul sample time of the most common kind: the probe's own fixed
// work stands in for one step.
std::optional<ImbalancePrediction> prediction(const ClusterHistograms& h, const KindTable& kinds,
                                              const std::vector<Mode>& modes,
                                              std::optional<std::uint64_t> ranks) {
  if (modes.empty()) return std::nullopt;
  const Mode mode = std::find(modes.begin(), modes.end(), Mode::concurrent) != modes.end()
                        ? Mode::concurrent
                        : modes.front();
  const LogHistogram slowdowns = h.all_kinds(Metric::cluster_slowdown, mode);
  if (slowdowns.count() == 0) return std::nullopt;
  std::optional<double> step;
  std::uint64_t most = 0;
  for (std::size_t k = 0; k < kinds.size; ++k) {
    const std::uint64_t n = h.histogram(Metric::matmul_seconds, mode, k).count();
    if (n > most) {
      most = n;
      // The step as the reference core runs it, its typical noise included:
      // the slowdowns are ratios of such steps. matmul_seconds is the
      // uninterrupted time, so it is scaled by 1 / (1 − noise).
      const ClusterReference ref = cluster_reference(h, mode, k);
      step = ref.matmul_seconds && ref.noise_ratio && *ref.noise_ratio < 1
                 ? std::optional<double>(*ref.matmul_seconds / (1 - *ref.noise_ratio))
                 : ref.matmul_seconds;
    }
  }
  if (!step) return std::nullopt;
  return predict_imbalance(slowdowns, *step, ranks.value_or(slowdowns.count()));
}

template <typename T>
std::vector<T> records_as(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  // Non-root ranks receive nothing: memcpy with the null data() of an empty
  // vector is undefined even for 0 bytes (UBSan, nonnull-attribute).
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

Reduction reduce_reports(MpiEnvironment& env, const NodeReport* mine, const std::string& error,
                         const ReduceOptions& options) {
  const bool root = env.node_index() == 0;
  const auto node = static_cast<std::uint32_t>(env.node_index());
  const NodeReport empty;
  const NodeReport& report = mine != nullptr ? *mine : empty;

  const auto reduce_start = std::chrono::steady_clock::now();
  const std::uint64_t bytes_before = env.bytes_sent();

  // The modes to summarize: as given, else the union of what the nodes ran.
  std::vector<Mode> modes = options.modes;
  if (modes.empty()) {
    std::uint64_t seen[kModes] = {};
    for (const auto& m : report.modes) seen[static_cast<std::size_t>(m.mode)] = 1;
    env.allreduce_max(std::span<std::uint64_t>(seen, kModes));
    for (Mode m : {Mode::isolated, Mode::concurrent}) {
      if (seen[static_cast<std::size_t>(m)] != 0) modes.push_back(m);
    }
  }

  Reduction out;
  out.histograms = std::make_unique<ClusterHistograms>();
  KindTable& kinds = out.kinds;
  kinds = kind_table(report);
  env.allreduce_records(
      bytes_of(kinds), sizeof(KindTable),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        merge_kind_table_buffers(in, inout, static_cast<int>(n));
      },
      true);
  ClusterHistograms& histograms = *out.histograms;
  add_node_figures(histograms, report, kinds);
  allreduce(env, histograms, 0, kHistogramKeys);
  // Pass 2 reduces only the cluster_slowdown keys (contiguous by key()).
  ClusterHistograms pass2;
  add_cluster_slowdowns(pass2, report, kinds, histograms);
  const std::size_t first = ClusterHistograms::key(Metric::cluster_slowdown, Mode::isolated, 0);
  allreduce(env, pass2, first, kModes * kMaxKinds);
  histograms.merge(pass2);

  TopK top = node_top_k(report, node);
  env.allreduce_records(
      bytes_of(top), sizeof(TopK),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        merge_top_k_buffers(in, inout, static_cast<int>(n));
      },
      true);
  NodeSummary summary = summarize_node(report, node);
  const auto summaries =
      records_as<NodeSummary>(env.gather_records(std::as_bytes(std::span(&summary, 1))));
  const std::string name = report.hostname;
  const auto names = env.gather_blobs(std::as_bytes(std::span(name.data(), name.size())));
  const auto errors = env.gather_blobs(std::as_bytes(std::span(error.data(), error.size())));
  const std::string details = worst_details(report, top, node, kinds, histograms);
  const auto all_details =
      env.gather_blobs(std::as_bytes(std::span(details.data(), details.size())));
  // --full: every core of every node, to rank 0 (proportional to all cores).
  std::vector<std::vector<std::byte>> all_cells;
  if (options.full) {
    const std::string cells = node_cells(report, node, kinds, histograms);
    all_cells = env.gather_blobs(std::as_bytes(std::span(cells.data(), cells.size())));
  }
  const double reduce_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - reduce_start).count();
  if (options.verbose) {
    // One write, so that the lines of ranks sharing a terminal never mix.
    std::ostringstream line;
    line << options.prefix << "sent " << env.bytes_sent() - bytes_before
         << " bytes in the reductions (" << env.bytes_sent() << " in all), reductions took "
         << reduce_seconds * 1e3 << " ms\n";
    std::cerr << line.str() << std::flush;
  }
  if (!root) return out;

  ClusterReport& cluster = out.report;
  cluster.version = CORENOISE_VERSION;
  cluster.started_unix_seconds = options.started_unix_seconds;
  cluster.duration_seconds = unix_seconds_now() - options.started_unix_seconds;
  cluster.node_count = static_cast<std::uint32_t>(env.node_count());
  cluster.settings = options.settings;
  const auto outliers = node_outliers(summaries);
  std::vector<std::string> hostnames;
  for (const auto& blob : names) hostnames.push_back(text_of(blob));
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    ClusterNode n;
    n.index = static_cast<std::uint32_t>(i);
    n.name = i < hostnames.size() ? hostnames[i] : "";
    n.error = i < errors.size() ? text_of(errors[i]) : "";
    n.summary = summaries[i];
    n.robust_z = outliers[i].robust_z;
    n.outlier = outliers[i].flagged;
    cluster.core_count += n.summary.probed_cores;
    for (std::size_t s = 0; s < kCoreStates; ++s) {
      if (is_unhealthy(kAllCoreStates[s]) && n.summary.states[s] > 0) {
        cluster.healthy = false;
      }
    }
    if (n.outlier) cluster.healthy = false;
    cluster.nodes.push_back(std::move(n));
  }
  for (const WorstCore& w : top.cores()) {
    WorstCoreEntry entry;
    entry.node = w.node;
    entry.node_name = w.node < hostnames.size() ? hostnames[w.node] : "";
    entry.cpu = w.cpu;
    entry.state = static_cast<CoreState>(w.state);
    entry.mode = static_cast<Mode>(w.mode);
    entry.expected_slowdown = w.expected_slowdown;
    if (w.node < all_details.size()) {
      const json d = json::parse(text_of(all_details[w.node]));
      for (const auto& item : d) {
        if (item["cpu"].get<unsigned>() != w.cpu) continue;
        entry.cause = item["cause"].get<std::string>();
        if (item["cluster_slowdown"].is_number()) {
          entry.cluster_slowdown = item["cluster_slowdown"].get<double>();
        }
      }
    }
    cluster.worst.push_back(std::move(entry));
  }
  cluster.quantiles = cluster_quantiles(histograms, kinds, modes);
  cluster.prediction = prediction(histograms, kinds, modes, options.ranks);
  cluster.drain_commands = drain_commands(cluster);
  for (std::size_t i = 0; i < all_cells.size(); ++i) {
    cluster.cells.push_back(cells_from_json(static_cast<std::uint32_t>(i), text_of(all_cells[i])));
  }
  return out;
}

}  // namespace corenoise
