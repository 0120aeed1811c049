#include "collector/job/model/node_digest.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace corenoise {

using nlohmann::json;

std::vector<RankRecord::Site> merged_sites(
    const std::vector<const std::vector<RankRecord::Site>*>& lists) {
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::vector<RankRecord::Site> merged;
  for (const auto* list : lists) {
    for (const RankRecord::Site& s : *list) {
      const auto [it, added] = index.try_emplace({s.call, s.site}, merged.size());
      if (added) {
        merged.push_back(s);
        continue;
      }
      RankRecord::Site& site = merged[it->second];
      site.calls = std::max(site.calls, s.calls);
      site.wait_seconds += s.wait_seconds;
      site.wait_max_seconds = std::max(site.wait_max_seconds, s.wait_max_seconds);
    }
  }
  return merged;
}

NodeDigest node_digest(const RankRecord& first, const std::vector<RankRecord>& node_records,
                       std::vector<float> lateness) {
  NodeDigest digest;
  digest.host = first.host;
  digest.culprits = first.node_culprits;
  digest.interrupts = first.node_interrupts;
  digest.traced = first.node_traced;
  digest.daemon = first.node_daemon;
  digest.lateness = std::move(lateness);
  digest.findings = job_findings(node_records);
  std::vector<const std::vector<RankRecord::Site>*> lists;
  for (const RankRecord& r : node_records) lists.push_back(&r.sites);
  digest.sites = merged_sites(lists);
  return digest;
}

json to_wire(const NodeDigest& digest) {
  json findings = json::array();
  for (const JobFinding& f : digest.findings) {
    findings.push_back({{"kind", f.kind},
                        {"ranks", f.ranks},
                        {"nodes", f.nodes},
                        {"fix", f.fix},
                        {"intro", f.intro},
                        {"examples", f.examples},
                        {"examples_total", f.examples_total}});
  }
  json wire = {{"host", digest.host},
               {"culprits", culprits_to_wire(digest.culprits)},
               {"interrupts", interrupts_to_wire(digest.interrupts)},
               {"lateness", digest.lateness},
               {"findings", findings},
               {"sites", sites_to_wire(digest.sites)}};
  if (digest.daemon) wire["daemon"] = verdicts_to_json(*digest.daemon);
  if (!digest.traced.empty()) wire["traced"] = traced_to_wire(digest.traced);
  return wire;
}

NodeDigest digest_from_wire(const json& wire) {
  NodeDigest digest;
  digest.host = wire.at("host").get<std::string>();
  digest.culprits = culprits_from_wire(wire.at("culprits"));
  if (wire.contains("interrupts")) digest.interrupts = interrupts_from_wire(wire.at("interrupts"));
  if (wire.contains("traced")) digest.traced = traced_from_wire(wire.at("traced"));
  if (wire.contains("daemon") && wire.at("daemon").is_object())
    digest.daemon = verdicts_from_json(wire.at("daemon"));
  digest.lateness = wire.at("lateness").get<std::vector<float>>();
  for (const json& f : wire.at("findings")) {
    JobFinding finding;
    finding.kind = f.at("kind").get<std::string>();
    finding.ranks = f.at("ranks").get<std::vector<int>>();
    std::sort(finding.ranks.begin(), finding.ranks.end());
    finding.nodes = f.at("nodes").get<std::vector<std::string>>();
    finding.fix = f.at("fix").get<std::string>();
    finding.intro = f.at("intro").get<std::string>();
    finding.examples = f.at("examples").get<std::vector<std::string>>();
    finding.examples_total = f.at("examples_total").get<std::size_t>();
    digest.findings.push_back(std::move(finding));
  }
  digest.sites = sites_from_wire(wire.at("sites"));
  return digest;
}

}  // namespace corenoise
