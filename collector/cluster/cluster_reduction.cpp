#include "collector/cluster/cluster_reduction.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "collector/cluster/node_health.h"
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
// its state: cpu, state, node- and cluster-relative expected slowdown, cause
// (left out where it says nothing).
std::string node_cells(const NodeReport& report, std::uint32_t /*node*/, const KindTable& kinds,
                       const ClusterHistograms& reduced) {
  json cells = json::array();
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    json cell = {{"cpu", report.pus[i].cpu}, {"state", to_string(report.state(i))}};
    if (!report.modes.empty()) {
      const ModeReport& mode = report.modes[report.deciding_mode(i)];
      const CoreFigures& core = mode.verdicts.cores[i];
      if (!core.cause.says_nothing()) cell["why"] = to_json(core.cause);
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
    if (const auto state = core_state_named(c.at("state").get<std::string>())) cell.state = *state;
    if (c.contains("expected_slowdown"))
      cell.expected_slowdown = c["expected_slowdown"].get<double>();
    if (c.contains("cluster_slowdown")) cell.cluster_slowdown = c["cluster_slowdown"].get<double>();
    cell.cause = cause_in(c);
    cells.cores.push_back(std::move(cell));
  }
  return cells;
}

// This node's part of the final worst list: the cause and the
// cluster-relative slowdown of each of its cores in it (only the owner has
// the figures; the top-K records carry numbers only).
std::string worst_details(const NodeReport& report, const TopK& top, std::uint32_t node,
                          const KindTable& kinds, const ClusterHistograms& reduced) {
  json details = json::array();
  for (const WorstCore& w : top.cores()) {
    if (w.node != node) continue;
    const auto index = pu_index(report, w.cpu);
    if (!index) continue;
    json entry = {{"cpu", w.cpu}, {"cluster_slowdown", nullptr}};
    if (!report.modes.empty()) {
      const auto& deciding = report.modes[report.deciding_mode(*index)];
      entry["why"] = to_json(deciding.verdicts.cores[*index].cause);
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
    for (ProbeKind probe : kAllProbeKinds) {
      const Metric metric = figure_metric(probe);
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
    const std::uint64_t n = h.histogram(figure_metric(ProbeKind::matmul), mode, k).count();
    if (n > most) {
      most = n;
      // The step as the reference core runs it, its typical noise included:
      // the slowdowns are ratios of such steps. matmul_seconds is the
      // uninterrupted time, so it is scaled by 1 / (1 − noise).
      const ClusterReference ref = cluster_reference(h, mode, k);
      const auto& matmul = ref.figure[ProbeKind::matmul];
      const auto& noise = ref.figure[ProbeKind::detour];
      step = matmul && noise && *noise < 1 ? std::optional<double>(*matmul / (1 - *noise)) : matmul;
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

// Leader 0 gets every leader's text, in node-index order; the others an
// empty vector.
std::vector<std::string> gather_texts(MpiEnvironment& env, const std::string& text) {
  std::vector<std::string> texts;
  for (const auto& blob : env.gather_blobs(std::as_bytes(std::span(text.data(), text.size())))) {
    texts.push_back(text_of(blob));
  }
  return texts;
}

// The modes to summarize: as given, else the union of what the nodes ran.
std::vector<Mode> agreed_modes(MpiEnvironment& env, const NodeReport& report,
                               const std::vector<Mode>& given) {
  if (!given.empty()) return given;
  std::vector<Mode> modes;
  std::uint64_t seen[kModes] = {};
  for (const auto& m : report.modes) seen[static_cast<std::size_t>(m.mode)] = 1;
  env.allreduce_max(std::span<std::uint64_t>(seen, kModes));
  for (Mode m : {Mode::isolated, Mode::concurrent}) {
    if (seen[static_cast<std::size_t>(m)] != 0) modes.push_back(m);
  }
  return modes;
}

// The CPU kinds of every node, in one table all leaders share.
KindTable agreed_kinds(MpiEnvironment& env, const NodeReport& report) {
  KindTable kinds = kind_table(report);
  env.allreduce_records(
      bytes_of(kinds), sizeof(KindTable),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        merge_kind_table_buffers(in, inout, static_cast<int>(n));
      },
      true);
  return kinds;
}

// Pass 1 reduces every node's figures; pass 2, against the cluster
// references pass 1 gives, the cluster-relative slowdowns (only their keys,
// contiguous by key()). Every leader gets the sum.
std::unique_ptr<ClusterHistograms> reduced_histograms(MpiEnvironment& env, const NodeReport& report,
                                                      const KindTable& kinds) {
  auto histograms = std::make_unique<ClusterHistograms>();
  add_node_figures(*histograms, report, kinds);
  allreduce(env, *histograms, 0, kHistogramKeys);
  ClusterHistograms pass2;
  add_cluster_slowdowns(pass2, report, kinds, *histograms);
  const std::size_t first = ClusterHistograms::key(Metric::cluster_slowdown, Mode::isolated, 0);
  allreduce(env, pass2, first, kModes * kMaxKinds);
  histograms->merge(pass2);
  return histograms;
}

// The cluster's worst cores, the same on every leader.
TopK reduced_top_k(MpiEnvironment& env, const NodeReport& report, std::uint32_t node) {
  TopK top = node_top_k(report, node);
  env.allreduce_records(
      bytes_of(top), sizeof(TopK),
      [](const std::byte* in, std::byte* inout, std::size_t n) {
        merge_top_k_buffers(in, inout, static_cast<int>(n));
      },
      true);
  return top;
}

// What leader 0 holds of every node after the gathers, by node index (the
// other leaders hold nothing).
struct GatheredNodes {
  std::vector<NodeSummary> summaries;
  std::vector<std::string> names;    // hostnames
  std::vector<std::string> errors;   // why a node contributed nothing
  std::vector<std::string> details;  // worst_details() of each node
  std::vector<std::string> cells;    // node_cells() of each node; --full only
};

GatheredNodes gather_nodes(MpiEnvironment& env, const NodeReport& report, const std::string& error,
                           std::uint32_t node, const TopK& top, const KindTable& kinds,
                           const ClusterHistograms& histograms, bool full) {
  GatheredNodes gathered;
  NodeSummary summary = summarize_node(report, node);
  gathered.summaries =
      records_as<NodeSummary>(env.gather_records(std::as_bytes(std::span(&summary, 1))));
  // The report's own name, else this leader's: a node whose daemon did not
  // answer (collect) is named all the same, as its leader runs on it.
  gathered.names = gather_texts(env, report.hostname.empty() ? local_hostname() : report.hostname);
  gathered.errors = gather_texts(env, error);
  gathered.details = gather_texts(env, worst_details(report, top, node, kinds, histograms));
  // --full: every core of every node, to rank 0 (proportional to all cores).
  if (full) gathered.cells = gather_texts(env, node_cells(report, node, kinds, histograms));
  return gathered;
}

// --verbose: what this leader sent in the reductions and how long they took.
void print_traffic(const MpiEnvironment& env, const std::string& prefix, std::uint64_t bytes_before,
                   double reduce_seconds) {
  // One write, so that the lines of ranks sharing a terminal never mix.
  std::ostringstream line;
  line << prefix << "sent " << env.bytes_sent() - bytes_before << " bytes in the reductions ("
       << env.bytes_sent() << " in all), reductions took " << reduce_seconds * 1e3 << " ms\n";
  std::cerr << line.str() << std::flush;
}

// Every node with its name, error, summary and place among the nodes.
std::vector<ClusterNode> cluster_nodes(const GatheredNodes& gathered) {
  const auto outliers = node_outliers(gathered.summaries);
  std::vector<ClusterNode> nodes;
  for (std::size_t i = 0; i < gathered.summaries.size(); ++i) {
    ClusterNode n;
    n.index = static_cast<std::uint32_t>(i);
    n.name = i < gathered.names.size() ? gathered.names[i] : "";
    n.error = i < gathered.errors.size() ? gathered.errors[i] : "";
    n.summary = gathered.summaries[i];
    n.robust_z = outliers[i].robust_z;
    n.outlier = outliers[i].flagged;
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// The top-K's numbers with the node's name, and the cause and cluster
// slowdown only the core's own node could give (worst_details()).
std::vector<WorstCoreEntry> worst_entries(const TopK& top, const GatheredNodes& gathered) {
  std::vector<WorstCoreEntry> worst;
  for (const WorstCore& w : top.cores()) {
    WorstCoreEntry entry;
    entry.node = w.node;
    entry.node_name = w.node < gathered.names.size() ? gathered.names[w.node] : "";
    entry.cpu = w.cpu;
    entry.state = static_cast<CoreState>(w.state);
    entry.mode = static_cast<Mode>(w.mode);
    entry.expected_slowdown = w.expected_slowdown;
    if (w.node < gathered.details.size()) {
      const json d = json::parse(gathered.details[w.node]);
      for (const auto& item : d) {
        if (item["cpu"].get<unsigned>() != w.cpu) continue;
        entry.cause = cause_in(item);
        if (item["cluster_slowdown"].is_number()) {
          entry.cluster_slowdown = item["cluster_slowdown"].get<double>();
        }
      }
    }
    worst.push_back(std::move(entry));
  }
  return worst;
}

// Leader 0's ClusterReport from what the reductions and gathers gave it,
// judged by the sweep's policy (node_health.h).
ClusterReport assemble_report(const ReduceOptions& options, std::uint32_t node_count,
                              const std::vector<Mode>& modes, const KindTable& kinds,
                              const ClusterHistograms& histograms, const TopK& top,
                              const GatheredNodes& gathered) {
  ClusterReport cluster;
  cluster.version = CORENOISE_VERSION;
  cluster.started_unix_seconds = options.started_unix_seconds;
  cluster.duration_seconds = unix_seconds_now() - options.started_unix_seconds;
  cluster.node_count = node_count;
  cluster.settings = options.settings;
  cluster.nodes = cluster_nodes(gathered);
  for (const ClusterNode& n : cluster.nodes) {
    cluster.core_count += n.summary.probed_cores;
    if (!is_healthy(n)) cluster.healthy = false;
  }
  cluster.worst = worst_entries(top, gathered);
  cluster.quantiles = cluster_quantiles(histograms, kinds, modes);
  cluster.prediction = prediction(histograms, kinds, modes, options.ranks);
  cluster.drain_commands = drain_commands(cluster);
  for (std::size_t i = 0; i < gathered.cells.size(); ++i) {
    cluster.cells.push_back(cells_from_json(static_cast<std::uint32_t>(i), gathered.cells[i]));
  }
  return cluster;
}

}  // namespace

Reduction reduce_reports(MpiEnvironment& env, const NodeReport* mine, const std::string& error,
                         const ReduceOptions& options) {
  const auto node = static_cast<std::uint32_t>(env.node_index());
  const NodeReport empty;
  const NodeReport& report = mine != nullptr ? *mine : empty;
  const auto reduce_start = std::chrono::steady_clock::now();
  const std::uint64_t bytes_before = env.bytes_sent();

  // The collectives, in the same order on every leader.
  const std::vector<Mode> modes = agreed_modes(env, report, options.modes);
  Reduction out;
  out.kinds = agreed_kinds(env, report);
  out.histograms = reduced_histograms(env, report, out.kinds);
  const TopK top = reduced_top_k(env, report, node);
  const GatheredNodes gathered =
      gather_nodes(env, report, error, node, top, out.kinds, *out.histograms, options.full);
  if (options.verbose) {
    print_traffic(
        env, options.prefix, bytes_before,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - reduce_start).count());
  }

  if (node == 0) {
    out.report = assemble_report(options, static_cast<std::uint32_t>(env.node_count()), modes,
                                 out.kinds, *out.histograms, top, gathered);
  }
  return out;
}

}  // namespace corenoise
