#include "collector/report/cluster_report_json.h"

#include <cmath>

#include "probe/report_json.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity: a figure nothing measured is null.
json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }
json number(const std::optional<double>& value) { return value ? number(*value) : json(nullptr); }

const char* trace_text(NodeSummary::Trace trace) {
  switch (trace) {
    case NodeSummary::Trace::on:
      return "on";
    case NodeSummary::Trace::unavailable:
      return "unavailable";
    case NodeSummary::Trace::off:
      break;
  }
  return "off";
}

json node_json(const ClusterNode& node) {
  const NodeSummary& s = node.summary;
  json states = json::object();
  for (std::size_t i = 0; i < kCoreStates; ++i) {
    states[std::string(to_string(kAllCoreStates[i]))] = s.states[i];
  }
  json j = {{"index", node.index},
            {"name", node.name},
            {"probed_cores", s.probed_cores},
            {"states", states},
            {"median_expected_slowdown", number(s.median_expected_slowdown)},
            {"max_expected_slowdown", number(s.max_expected_slowdown)},
            {"median_clock_hertz", number(s.median_clock_hertz)},
            {"median_noise_ratio", number(s.median_noise_ratio)},
            {"robust_z", number(node.robust_z)},
            {"outlier", node.outlier},
            {"trace", trace_text(s.trace)}};
  if (!node.error.empty()) j["error"] = node.error;
  return j;
}

json worst_json(const WorstCoreEntry& w) {
  return {{"node", w.node},
          {"node_name", w.node_name},
          {"cpu", w.cpu},
          {"state", to_string(w.state)},
          {"mode", to_string(w.mode)},
          {"expected_slowdown", number(w.expected_slowdown)},
          {"cluster_slowdown", number(w.cluster_slowdown)},
          {"cause", cause_text(w.cause)}};
}

json quantiles_json(const MetricQuantiles& q) {
  return {{"metric", to_string(q.metric)},
          {"mode", to_string(q.mode)},
          {"kind", q.kind},
          {"count", q.count},
          {"min", number(q.min)},
          {"p50", number(q.p50)},
          {"p90", number(q.p90)},
          {"p99", number(q.p99)},
          {"max", number(q.max)}};
}

json prediction_json(const ImbalancePrediction& p) {
  return {{"step_seconds", number(p.step_seconds)},
          {"cores", p.cores},
          {"median_slowdown", number(p.median_slowdown)},
          {"max_slowdown", number(p.max_slowdown)},
          {"wait_seconds", number(p.wait_seconds)},
          {"ranks", p.ranks},
          {"expected_max_slowdown", number(p.expected_max_slowdown)},
          {"predicted_wait_seconds", number(p.predicted_wait_seconds)},
          {"quantile_max_slowdown", number(p.quantile_max_slowdown)}};
}

json cells_json(const NodeCells& node) {
  json cores = json::array();
  for (const CoreCell& c : node.cores) {
    cores.push_back({{"cpu", c.cpu},
                     {"state", to_string(c.state)},
                     {"expected_slowdown", number(c.expected_slowdown)},
                     {"cluster_slowdown", number(c.cluster_slowdown)},
                     {"cause", cause_text(c.cause)}});
  }
  return {{"node", node.node}, {"cores", cores}};
}

}  // namespace

json to_json(const ClusterReport& report) {
  // The settings block is the node report's, so that `probe --json` and
  // `sweep --json` describe the same options the same way.
  NodeReport settings_only;
  settings_only.settings = report.settings;
  json nodes = json::array();
  for (const auto& n : report.nodes) nodes.push_back(node_json(n));
  json worst = json::array();
  for (const auto& w : report.worst) worst.push_back(worst_json(w));
  json quantiles = json::array();
  for (const auto& q : report.quantiles) quantiles.push_back(quantiles_json(q));
  json settings = to_json(settings_only)["settings"];
  // The ISA the user asked for (--isa), null for "the widest the CPU has":
  // settings.isa above is a node report's, the one a node ran, which a
  // cluster report does not hold.
  settings["isa_requested"] =
      report.settings.isa ? json(to_string(*report.settings.isa)) : json(nullptr);
  json out = {
      {"schema", "corenoise-sweep/1"},
      {"version", report.version},
      {"started_unix_seconds", number(report.started_unix_seconds)},
      {"duration_seconds", number(report.duration_seconds)},
      {"layout", report.layout},
      {"node_count", report.node_count},
      {"core_count", report.core_count},
      {"healthy", report.healthy},
      {"settings", settings},
      {"nodes", nodes},
      {"worst", worst},
      {"cluster", {{"quantiles", quantiles}}},
      {"prediction", report.prediction ? prediction_json(*report.prediction) : json(nullptr)},
      {"drain_commands", report.drain_commands}};
  if (!report.cells.empty()) {
    json cells = json::array();
    for (const auto& c : report.cells) cells.push_back(cells_json(c));
    out["cells"] = cells;
  }
  return out;
}

}  // namespace corenoise
