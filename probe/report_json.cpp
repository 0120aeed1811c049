#include "probe/report_json.h"

#include <cmath>
#include <string>

#include "probe/trace/culprit_names.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

using nlohmann::json;

void put(json& j, const char* key, const std::optional<double>& value) {
  if (value) j[key] = *value;
}

// `key`: [lo, hi], the 95 % interval of `value`, where both are known.
void put_interval(json& j, const char* key, const std::optional<double>& value,
                  const Uncertainty& u) {
  if (!value) return;
  if (const auto i = interval(*value, u, kReportedConfidence)) j[key] = {i->lo, i->hi};
}

json confirmation_json(const CoreFigures::Confirmation& c, const Cause& cause) {
  json j = {{"suspected_state", to_string(c.suspected)},
            {"suspected_cause", suspected_cause_text(cause)},
            {"confirmed", c.confirmed},
            {"rounds", c.rounds},
            {"alpha", c.alpha}};
  put(j, "figure", c.figure);
  put(j, "lower_bound", c.bound);
  if (c.reference_cpu) j["reference_cpu"] = *c.reference_cpu;
  return j;
}

json detour_json(const DetourResult& d) {
  json j = {{"noise_ratio", d.noise_ratio()},     {"count", d.count},
            {"total_seconds", d.total_seconds},   {"max_seconds", d.max_seconds},
            {"window_seconds", d.window_seconds}, {"threshold_seconds", d.threshold_seconds},
            {"preemptions", d.preemptions}};
  if (d.interrupts) j["interrupts"] = *d.interrupts;
  if (d.softirqs) j["softirqs"] = *d.softirqs;
  if (d.steal_seconds) j["steal_seconds"] = *d.steal_seconds;
  if (d.preempted_seconds) j["preempted_seconds"] = *d.preempted_seconds;
  json histogram = json::array();
  for (int i = 0; i < kDetourBuckets; ++i) {
    const double upper = detour_bucket_upper_seconds(i);
    histogram.push_back({{"le_seconds", std::isinf(upper) ? json("+Inf") : json(upper)},
                         {"count", d.histogram[i]}});
  }
  j["histogram"] = std::move(histogram);
  return j;
}

// What the tracer charged the detours to (docs/verdicts.md, "Named culprits").
json trace_json(const trace::Attribution& a) {
  json culprits = json::array();
  for (const trace::Culprit& c : a.culprits) {
    json x = culprit_json(c);
    x["text"] = trace::describe(c);
    culprits.push_back(std::move(x));
  }
  return {{"matched_seconds", a.detour_seconds},
          {"lost_events", a.lost_events},
          {"overran", a.overran},
          {"culprits", std::move(culprits)}};
}

// One kind's figures of a core: {figure, interval, ratio, ratio_interval,
// spread} under the descriptor's names, and matmul's own details.
json kind_json(const CoreFigures& c, ProbeKind probe) {
  const ProbeDescriptor& d = descriptor(probe);
  const std::string ratio(d.json_ratio);
  json m = {{std::string(d.json_figure), *c.figure[probe]}};
  put_interval(m, "interval", c.figure[probe], c.error[probe]);
  if (!ratio.empty()) {
    put(m, ratio.c_str(), c.slowdown[probe]);
    put_interval(m, (ratio + "_interval").c_str(), c.slowdown[probe], c.slowdown_error[probe]);
  }
  if (d.reports_spread) put(m, "spread", c.spread[probe]);
  if (probe == ProbeKind::matmul) {
    put(m, "flops_per_second", c.matmul_flops_per_second);
    put(m, "sample_seconds", c.matmul_sample_seconds);
  }
  return m;
}

// A verdict's cause: the sentence for people ("cause") and the data it is
// made from for programs ("why", probe/cause.h), which a reader of the
// report (collect, a job's rank) takes back.
void put_cause(json& j, const Cause& cause) {
  j["cause"] = cause_text(cause);
  j["why"] = to_json(cause);
}

// The figures of one mode for one CPU: the probe objects and the verdict.
void put_figures(json& j, const CoreFigures& c) {
  j["state"] = to_string(c.state);
  put_cause(j, c.cause);
  if (c.state == CoreState::skipped) return;
  put(j, "expected_slowdown", c.expected_slowdown);
  put_interval(j, "expected_slowdown_interval", c.expected_slowdown, c.expected_slowdown_error);
  put(j, "lower_bound", c.bound);
  if (c.confirmation) j["confirmation"] = confirmation_json(*c.confirmation, c.cause);
  put(j, "excess_noise", c.excess_noise);
  put_interval(j, "excess_noise_interval", c.excess_noise, c.excess_noise_error);
  put(j, "noise_factor", c.slowdown[ProbeKind::detour]);
  put(j, "residual", c.residual);
  put(j, "design_ratio", c.design_ratio);
  for (ProbeKind probe : kAllProbeKinds) {
    if (probe == ProbeKind::detour) {
      if (!c.detour) continue;
      j["detour"] = detour_json(*c.detour);
      put_interval(j["detour"], "noise_ratio_interval", c.detour->noise_ratio(), c.error[probe]);
      if (c.culprits) j["detour"]["trace"] = trace_json(*c.culprits);
    } else if (c.figure[probe]) {
      j[std::string(descriptor(probe).name)] = kind_json(c, probe);
    }
  }
}

json probe_names(const std::vector<ProbeKind>& probes) {
  json names = json::array();
  for (auto p : probes) names.push_back(to_string(p));
  return names;
}

json settings_json(const NodeReport& r) {
  const ProbeSettings& s = r.settings;
  json modes = json::array();
  for (auto m : s.modes) modes.push_back(to_string(m));
  return {{"probes", probe_names(s.probes)},
          {"mode", s.modes.size() > 1 ? "both" : std::string(to_string(s.modes.front()))},
          {"modes", modes},
          {"samples", s.samples},
          {"matmul_size", s.matmul_size},
          {"dtype", to_string(s.dtype)},
          {"reps", s.reps},
          {"isa", to_string(r.isa)},
          {"detour_window_seconds", s.detour_window_seconds},
          {"detour_threshold_seconds", s.detour_threshold_seconds},
          {"stream_bytes", s.stream_bytes},
          {"thresholds",
           {{"throttled_clock_ratio", s.thresholds.throttled_clock_ratio},
            {"noisy_excess_noise", s.thresholds.noisy_excess_noise},
            {"slow_ratio", s.thresholds.slow_ratio},
            {"contended_stream_ratio", s.thresholds.contended_stream_ratio},
            {"suspect_alpha", s.thresholds.alpha}}},
          {"confirm", s.confirm},
          {"screen_alpha", s.screen_alpha},
          {"confirm_samples", s.confirm_samples},
          {"false_alarm_rate", s.false_alarm_rate}};
}

json round_json(const ModeReport& m) {
  json refs = json::array();
  for (const auto& ref : m.verdicts.references) {
    json r = {{"kind", ref.kind}, {"cores", ref.cores}};
    for (const ProbeDescriptor& d : kProbeDescriptors) {
      put(r, std::string(d.figure_name).c_str(), ref.figure[d.kind]);
    }
    put(r, "noise_floor", ref.noise_floor);
    if (ref.peer_spread.estimated) {
      json spread = json::object();
      for (const ProbeDescriptor& d : kProbeDescriptors) {
        if (d.tested != Tested::none)
          spread[std::string(d.tested_name)] = ref.peer_spread.spread[d.kind];
      }
      r["peer_spread"] = std::move(spread);
    }
    refs.push_back(std::move(r));
  }
  json j = {{"mode", to_string(m.mode)},
            {"started_unix_seconds", m.started_unix_seconds},
            {"duration_seconds", m.duration_seconds},
            {"cancelled", m.cancelled},
            {"references", refs}};
  if (m.confirmation) {
    j["confirmation"] = {{"suspects", m.confirmation->suspects},
                         {"suspects_judged", m.confirmation->suspects_judged},
                         {"screened", m.confirmation->screened},
                         {"rounds", m.confirmation->rounds},
                         {"alpha", m.confirmation->alpha},
                         {"confirmed", m.confirmation->confirmed},
                         {"probes", probe_names(m.confirmation->probes)},
                         {"duration_seconds", m.confirmation->duration_seconds}};
  }
  return j;
}

}  // namespace

json to_json(const NodeReport& r) {
  json rounds = json::array();
  for (const auto& m : r.modes) rounds.push_back(round_json(m));

  json states = json::object();
  for (CoreState s : kAllCoreStates) states[std::string(to_string(s))] = r.count(s);

  json cpus = json::array();
  for (std::size_t i = 0; i < r.pus.size(); ++i) {
    const ProcessingUnit& pu = r.pus[i];
    json c = {{"cpu", pu.cpu},
              {"core", pu.core},
              {"package", pu.package},
              {"numa_node", pu.numa_node},
              {"kind", pu.kind}};
    if (!r.modes.empty()) {
      // At top level the overall verdict (state, cause) with the figures
      // of the mode it came from, which `mode` names; taken whole from one
      // mode so that a state never sits beside another mode's figures.
      // With several modes, each (the deciding one too) also under its own
      // name, so that a reader can tell the modes' verdicts apart.
      const NodeReport::Overall overall = r.overall(i);
      c["mode"] = to_string(overall.mode);
      put_figures(c, *overall.figures);
      for (std::size_t m = 0; r.modes.size() > 1 && m < r.modes.size(); ++m) {
        json own;
        put_figures(own, r.modes[m].verdicts.cores[i]);
        c[std::string(to_string(r.modes[m].mode))] = std::move(own);
      }
    } else {
      c["state"] = to_string(CoreState::skipped);
      put_cause(c, unprobed_cause(pu));
    }
    cpus.push_back(std::move(c));
  }

  return {{"version", r.version},
          {"hostname", r.hostname},
          {"topology",
           {{"source", r.topology_source}, {"this_system", r.this_system}, {"pus", r.pus.size()}}},
          {"settings", settings_json(r)},
          {"trace", r.trace},
          {"rounds", rounds},
          {"summary", {{"pus", r.pus.size()}, {"states", states}, {"healthy", r.healthy()}}},
          {"cpus", cpus}};
}

// --- Back from JSON: what a reader of the report (collect) needs ---------

namespace {

std::optional<double> opt(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

Mode mode_of(const std::string& name) {
  if (name == "isolated") return Mode::isolated;
  if (name == "concurrent") return Mode::concurrent;
  throw std::invalid_argument("unknown mode '" + name + "'");
}

CoreState state_of(const std::string& name) {
  if (const auto state = core_state_named(name)) return *state;
  throw std::invalid_argument("unknown state '" + name + "'");
}

CoreFigures figures_from_json(const json& j, unsigned cpu, const std::string& kind) {
  CoreFigures c;
  c.cpu = cpu;
  c.kind = kind;
  c.state = state_of(j.at("state").get<std::string>());
  c.cause = cause_in(j);
  c.expected_slowdown = opt(j, "expected_slowdown");
  c.excess_noise = opt(j, "excess_noise");
  c.slowdown[ProbeKind::detour] = opt(j, "noise_factor");
  c.residual = opt(j, "residual");
  c.design_ratio = opt(j, "design_ratio");
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    const std::string name(d.name);
    if (!j.contains(name) || d.kind == ProbeKind::detour) continue;
    const json& m = j[name];
    c.figure[d.kind] = opt(m, std::string(d.json_figure).c_str());
    if (!d.json_ratio.empty()) c.slowdown[d.kind] = opt(m, std::string(d.json_ratio).c_str());
    if (d.reports_spread) c.spread[d.kind] = opt(m, "spread");
  }
  if (j.contains("matmul")) {
    c.matmul_flops_per_second = opt(j["matmul"], "flops_per_second");
    c.matmul_sample_seconds = opt(j["matmul"], "sample_seconds");
  }
  if (j.contains("detour")) {
    const json& d = j["detour"];
    DetourResult r;
    r.window_seconds = d.value("window_seconds", 0.0);
    r.threshold_seconds = d.value("threshold_seconds", 0.0);
    r.count = d.value("count", std::uint64_t{0});
    r.total_seconds = d.value("total_seconds", 0.0);
    r.max_seconds = d.value("max_seconds", 0.0);
    r.preemptions = d.value("preemptions", std::uint64_t{0});
    c.detour = r;
    c.figure[ProbeKind::detour] = r.noise_ratio();
  }
  return c;
}

}  // namespace

NodeReport node_report_from_json(const json& doc) {
  NodeReport r;
  r.version = doc.value("version", "");
  r.hostname = doc.value("hostname", "");
  r.trace = doc.value("trace", "off");
  for (const json& round : doc.at("rounds")) {
    ModeReport m;
    m.mode = mode_of(round.at("mode").get<std::string>());
    m.started_unix_seconds = round.value("started_unix_seconds", 0.0);
    m.duration_seconds = round.value("duration_seconds", 0.0);
    m.cancelled = round.value("cancelled", false);
    for (const json& ref : round.value("references", json::array())) {
      KindReference k;
      k.kind = ref.value("kind", "");
      k.cores = ref.value("cores", std::size_t{0});
      for (const ProbeDescriptor& d : kProbeDescriptors) {
        k.figure[d.kind] = opt(ref, std::string(d.figure_name).c_str());
      }
      k.noise_floor = opt(ref, "noise_floor");
      m.verdicts.references.push_back(std::move(k));
    }
    r.modes.push_back(std::move(m));
  }
  for (const json& c : doc.at("cpus")) {
    ProcessingUnit pu;
    pu.cpu = c.at("cpu").get<unsigned>();
    pu.core = c.value("core", 0u);
    pu.package = c.value("package", 0u);
    pu.numa_node = c.value("numa_node", -1);
    pu.kind = c.value("kind", "default");
    // Before any round, what the writer said of a PU it cannot probe.
    if (const Cause why = cause_in(c); r.modes.empty() && why.skipped == SkipReason::other)
      pu.skip_reason = why.detail;
    for (std::size_t m = 0; m < r.modes.size(); ++m) {
      // Every mode's figures under its name; a single mode's at top level.
      const std::string name(to_string(r.modes[m].mode));
      const json& f = c.contains(name) ? c[name] : c;
      r.modes[m].verdicts.cores.push_back(figures_from_json(f, pu.cpu, pu.kind));
    }
    r.pus.push_back(std::move(pu));
  }
  return r;
}

}  // namespace corenoise
