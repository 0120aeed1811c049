#include "collector/job/model/job_report.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "collector/job/model/job_selection.h"

namespace corenoise {

namespace {

// What each node's reporting rank saw of its node, keyed by host: the
// other processes per CPU, and its corenoised's verdicts.
struct NodeViews {
  std::map<std::pair<std::string, unsigned>, std::vector<RankRecord::Culprit>> culprits;
  std::map<std::string, std::map<unsigned, DaemonVerdict>> verdicts;
  std::set<std::string> hosts;
};

NodeViews node_views(const std::vector<RankRecord>& records) {
  NodeViews views;
  for (const auto& r : records) {
    views.hosts.insert(r.host);
    for (const auto& c : r.node_culprits) {
      if (c.cpu >= 0) views.culprits[{r.host, static_cast<unsigned>(c.cpu)}].push_back(c);
    }
    if (r.node_daemon) views.verdicts[r.host] = *r.node_daemon;
  }
  return views;
}

// The culprits of the causes found: its busiest threads (three at most)
// for own-threads, the node's other processes on its CPUs for
// other-processes.
std::vector<JobCulprit> culprits_of(const RankRecord& r, const RankAttribution& a,
                                    const NodeViews& views) {
  std::vector<JobCulprit> culprits;
  if (a.causes[index_of(JobCause::own_threads)] > 0) {
    for (std::size_t i = 0; i < std::min<std::size_t>(3, r.threads.size()); ++i) {
      if (r.threads[i].seconds <= 0) break;
      culprits.push_back({JobCulprit::Kind::thread, r.threads[i].name, 0, 0, r.threads[i].seconds});
    }
  }
  if (a.causes[index_of(JobCause::other_processes)] > 0) {
    for (unsigned cpu : r.cpus) {
      auto it = views.culprits.find({r.host, cpu});
      if (it == views.culprits.end()) continue;
      for (const auto& c : it->second)
        culprits.push_back({JobCulprit::Kind::process, c.command, c.pid, cpu, c.seconds});
    }
  }
  return culprits;
}

// The node's verdicts on the rank's own CPUs.
std::optional<std::map<unsigned, DaemonVerdict>> verdicts_of(const RankRecord& r,
                                                             const NodeViews& views) {
  auto node = views.verdicts.find(r.host);
  if (node == views.verdicts.end()) return std::nullopt;
  std::map<unsigned, DaemonVerdict> own;
  for (unsigned cpu : r.cpus) {
    if (auto v = node->second.find(cpu); v != node->second.end()) own.insert(*v);
  }
  if (own.empty()) return std::nullopt;
  return own;
}

// Call sites merged over ranks (or nodes, node_digest.h), by call and
// site, most waiting first.
std::vector<JobCallSite> merged_call_sites(
    const std::vector<const std::vector<RankRecord::Site>*>& lists) {
  std::vector<JobCallSite> sites;
  for (RankRecord::Site& s : merged_sites(lists))
    sites.push_back(
        {std::move(s.call), std::move(s.site), s.calls, s.wait_seconds, s.wait_max_seconds});
  std::sort(sites.begin(), sites.end(), [](const JobCallSite& a, const JobCallSite& b) {
    if (a.wait_seconds != b.wait_seconds) return a.wait_seconds > b.wait_seconds;
    return std::tie(a.call, a.site) < std::tie(b.call, b.site);
  });
  return sites;
}

// The findings and call sites over every rank: from the records when
// every rank's came, else from the nodes' digests.
void findings_and_sites(const JobFacts& facts, std::size_t ranks,
                        const std::vector<RankRecord>& full, JobReport& report) {
  std::vector<const std::vector<RankRecord::Site>*> lists;
  if (full.size() >= ranks || facts.node_digests.empty()) {
    for (const RankRecord& r : full) lists.push_back(&r.sites);
    report.findings = job_findings(full);
  } else {
    std::vector<std::vector<JobFinding>> per_node;
    for (const auto& [node, digest] : facts.node_digests) {
      lists.push_back(&digest.sites);
      per_node.push_back(digest.findings);
    }
    report.findings = merge_findings(per_node);
  }
  report.call_sites = merged_call_sites(lists);
}

// Every node's row: its ranks' figures summed, from the summaries; its
// host from its first rank's record.
std::vector<JobNode> nodes_of(std::span<const RankSummary> all, const JobJudgement& judged,
                              const std::vector<RankRecord>& full,
                              std::map<int, std::vector<float>>& lateness) {
  std::map<int, JobNode> nodes;
  std::map<int, double> worst_caused;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RankSummary& s = all[i];
    JobNode& node = nodes[s.node_rank()];
    node.first_rank = s.node_rank();
    ++node.ranks;
    node.wait_seconds += s.measures.wait_seconds;
    node.wait_caused_seconds += s.measures.wait_caused_seconds;
    if (judged.ranks[i].main_cause) ++node.late_ranks;
    const double caused = s.measures.wait_caused_seconds;
    double& worst = worst_caused[s.node_rank()];
    if (caused > worst) {
      worst = caused;
      node.worst_rank = s.number();
    }
  }
  for (const RankRecord& r : full) {
    if (auto it = nodes.find(r.rank); it != nodes.end()) it->second.host = r.host;
  }
  std::vector<JobNode> rows;
  rows.reserve(nodes.size());
  for (auto& [first, node] : nodes) {
    if (auto it = lateness.find(first); it != lateness.end()) node.lateness = std::move(it->second);
    rows.push_back(std::move(node));
  }
  return rows;
}

}  // namespace

const JobRank* JobReport::rank(int number) const {
  for (const JobRank& r : ranks) {
    if (r.rank == number) return &r;
  }
  return nullptr;
}

JobReport build_job_report(JobFacts facts, std::span<const RankSummary> all,
                           const std::vector<RankRecord>& full) {
  JobReport report;
  report.facts = std::move(facts);
  report.ranks_reported = all.size();
  const JobJudgement judged = judge_ranks(all);
  report.cause_threshold_seconds = judged.threshold.seconds;
  report.cause_threshold_on_cpu_seconds = judged.threshold.on_cpu_seconds;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RankMeasures& m = all[i].measures;
    const RankAttribution& a = judged.ranks[i];
    // The waiting this rank caused, shared among its causes.
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    if (explained > 0 && a.main_cause) {
      for (std::size_t k = 0; k < kJobCauseCount; ++k)
        report.causes[k] += m.wait_caused_seconds * a.causes[k] / explained;
    }
    report.wait_seconds += m.wait_seconds;
    report.compute_seconds += m.compute_seconds;
    report.wait_caused_seconds += m.wait_caused_seconds;
    report.exchange_wait_seconds += m.exchange_wait_seconds;
    report.exchange_wait_caused_seconds += m.exchange_wait_caused_seconds;
    report.exchange_uncharged_seconds += m.exchange_uncharged_seconds;
    report.elapsed_seconds = std::max(report.elapsed_seconds, m.elapsed_seconds);
  }
  std::map<int, std::size_t> index_of_rank;
  for (std::size_t i = 0; i < all.size(); ++i) index_of_rank[all[i].number()] = i;
  const NodeViews views = node_views(full);
  for (const auto& r : full) {
    const auto it = index_of_rank.find(r.rank);
    if (it == index_of_rank.end()) continue;
    const RankAttribution& a = judged.ranks[it->second];
    report.ranks.push_back({r.rank, r.host, r.cpus, r.pid, r.measures, a, culprits_of(r, a, views),
                            r.config.busy_threads_peak, verdicts_of(r, views)});
  }
  for (std::size_t i : worst_ranks(all, judged)) report.worst_ranks.push_back(all[i].number());
  report.by_node = nodes_of(all, judged, full, report.facts.node_lateness);
  report.facts.node_lateness.clear();
  report.nodes = report.by_node.size();
  findings_and_sites(report.facts, all.size(), full, report);
  report.phases = job_phases(all, report.facts.warmup_steps, report.facts.steps);
  for (const JobFacts::Step& s : report.facts.worst_steps) {
    report.worst_steps.push_back(step_in_phases(s.first_step, s.steps, s.wait_caused_seconds,
                                                s.last_rank, s.call, s.site, report.phases));
  }
  return report;
}

JobReport build_job_report(JobFacts facts, const std::vector<RankRecord>& records) {
  return build_job_report(std::move(facts), summaries_of(records), records);
}

}  // namespace corenoise
