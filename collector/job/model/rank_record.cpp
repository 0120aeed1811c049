#include "collector/job/model/rank_record.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace corenoise {

using nlohmann::json;

json verdicts_to_json(const std::map<unsigned, DaemonVerdict>& verdicts) {
  json out = json::object();
  for (const auto& [cpu, v] : verdicts) {
    json verdict = {{"state", v.state}, {"why", to_json(v.cause)}};
    if (v.age_seconds) verdict["age_seconds"] = *v.age_seconds;
    out[std::to_string(cpu)] = std::move(verdict);
  }
  return out;
}

std::map<unsigned, DaemonVerdict> verdicts_from_json(const json& verdicts) {
  std::map<unsigned, DaemonVerdict> out;
  if (!verdicts.is_object()) return out;
  for (const auto& item : verdicts.items()) {
    const std::string& key = item.key();
    const json& v = item.value();
    unsigned cpu = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), cpu);
    if (error != std::errc() || end != key.data() + key.size() || !v.is_object()) continue;
    const auto text = [&v](const char* name) {
      return v.contains(name) && v[name].is_string() ? v[name].get<std::string>() : std::string();
    };
    DaemonVerdict verdict{text("state"), {}, std::nullopt};
    verdict.cause = cause_in(v);  // an odd cause costs the cause, not the verdict
    if (verdict.state.empty()) verdict.state = "unknown";
    if (v.contains("age_seconds") && v["age_seconds"].is_number())
      verdict.age_seconds = v["age_seconds"].get<double>();
    out[cpu] = std::move(verdict);
  }
  return out;
}

json sites_to_wire(const std::vector<RankRecord::Site>& sites) {
  json out = json::array();
  for (const auto& s : sites)
    out.push_back({s.call, s.site, s.calls, s.wait_seconds, s.wait_max_seconds});
  return out;
}

std::vector<RankRecord::Site> sites_from_wire(const json& wire) {
  std::vector<RankRecord::Site> sites;
  for (const auto& s : wire) {
    sites.push_back({s.at(0).get<std::string>(), s.at(1).get<std::string>(), s.at(2).get<double>(),
                     s.at(3).get<double>(), s.at(4).get<double>()});
  }
  return sites;
}

json culprits_to_wire(const std::vector<RankRecord::Culprit>& culprits) {
  json out = json::array();
  for (const auto& c : culprits) out.push_back({c.cpu, c.pid, c.command, c.seconds});
  return out;
}

std::vector<RankRecord::Culprit> culprits_from_wire(const json& wire) {
  std::vector<RankRecord::Culprit> culprits;
  for (const auto& c : wire) {
    culprits.push_back({c.at(0).get<int>(), c.at(1).get<long>(), c.at(2).get<std::string>(),
                        c.at(3).get<double>()});
  }
  return culprits;
}

json interrupts_to_wire(const std::vector<RankRecord::InterruptLine>& lines) {
  json out = json::array();
  for (const auto& l : lines) out.push_back({l.cpu, l.id, l.name, l.softirq, l.count, l.excess});
  return out;
}

std::vector<RankRecord::InterruptLine> interrupts_from_wire(const json& wire) {
  std::vector<RankRecord::InterruptLine> lines;
  for (const auto& l : wire) {
    lines.push_back({l.at(0).get<int>(), l.at(1).get<std::string>(), l.at(2).get<std::string>(),
                     l.at(3).get<bool>(), l.at(4).get<double>(), l.at(5).get<double>()});
  }
  return lines;
}

json traced_to_wire(const std::vector<RankRecord::TracedCulprit>& culprits) {
  json out = json::array();
  for (const auto& c : culprits) out.push_back({c.cpu, c.kind, c.text, c.seconds, c.share});
  return out;
}

std::vector<RankRecord::TracedCulprit> traced_from_wire(const json& wire) {
  std::vector<RankRecord::TracedCulprit> culprits;
  for (const auto& c : wire) {
    culprits.push_back({c.at(0).get<int>(), c.at(1).get<std::string>(), c.at(2).get<std::string>(),
                        c.at(3).get<double>(), c.at(4).get<double>()});
  }
  return culprits;
}

json to_wire(const RankRecord& r) {
  json wire = {{"rank", r.rank}, {"host", r.host}, {"cpus", r.cpus}, {"pid", r.pid}};
  wire["measures"] =
      std::vector<double>(as_array(r.measures), as_array(r.measures) + kRankMeasureCount);
  json threads = json::array();
  for (const auto& t : r.threads) threads.push_back({t.name, t.seconds});
  wire["threads"] = threads;
  wire["sites"] = sites_to_wire(r.sites);
  if (!r.node_culprits.empty()) wire["culprits"] = culprits_to_wire(r.node_culprits);
  if (!r.node_interrupts.empty()) wire["interrupts"] = interrupts_to_wire(r.node_interrupts);
  if (!r.node_traced.empty()) wire["traced"] = traced_to_wire(r.node_traced);
  if (r.node_daemon) wire["daemon"] = verdicts_to_json(*r.node_daemon);
  json pools = json::array();
  for (const auto& pool : r.config.unset_pools) pools.push_back({pool.variable, pool.library});
  wire["config"] = {{"busy_threads", r.config.busy_threads_peak},
                    {"node_cpus", r.config.node_cpus},
                    {"unset_pools", pools},
                    {"xla_dropped", r.config.xla_dropped},
                    {"binding_domain", r.config.binding_domain}};
  if (r.warmup)
    wire["warmup"] =
        std::vector<double>(as_array(*r.warmup), as_array(*r.warmup) + kRankMeasureCount);
  return wire;
}

RankRecord record_from_wire(const json& wire) {
  RankRecord r;
  r.rank = wire.at("rank").get<int>();
  r.host = wire.at("host").get<std::string>();
  r.cpus = wire.at("cpus").get<std::vector<unsigned>>();
  r.pid = wire.at("pid").get<long>();
  const auto measures = wire.at("measures").get<std::vector<double>>();
  std::copy_n(measures.begin(), std::min(measures.size(), kRankMeasureCount), as_array(r.measures));
  for (const auto& t : wire.at("threads"))
    r.threads.push_back({t.at(0).get<std::string>(), t.at(1).get<double>()});
  r.sites = sites_from_wire(wire.at("sites"));
  if (wire.contains("culprits")) r.node_culprits = culprits_from_wire(wire.at("culprits"));
  if (wire.contains("interrupts")) r.node_interrupts = interrupts_from_wire(wire.at("interrupts"));
  if (wire.contains("traced")) r.node_traced = traced_from_wire(wire.at("traced"));
  if (wire.contains("daemon") && !wire.at("daemon").is_null())
    r.node_daemon = verdicts_from_json(wire.at("daemon"));
  if (wire.contains("config")) {
    const json& config = wire.at("config");
    r.config.busy_threads_peak = config.at("busy_threads").get<int>();
    r.config.node_cpus = config.at("node_cpus").get<int>();
    for (const auto& pool : config.at("unset_pools"))
      r.config.unset_pools.push_back(
          {pool.at(0).get<std::string>(), pool.at(1).get<std::string>()});
    r.config.xla_dropped = config.at("xla_dropped").get<std::string>();
    r.config.binding_domain = config.value("binding_domain", "");
  }
  if (wire.contains("warmup")) {
    const auto warmup = wire.at("warmup").get<std::vector<double>>();
    r.warmup.emplace();
    std::copy_n(warmup.begin(), std::min(warmup.size(), kRankMeasureCount), as_array(*r.warmup));
  }
  return r;
}

}  // namespace corenoise
