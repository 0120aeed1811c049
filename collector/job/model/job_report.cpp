#include "collector/job/model/job_report.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>

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

// Call sites merged over ranks, by call and site, most waiting first.
std::vector<JobCallSite> merged_call_sites(const std::vector<RankRecord>& records) {
  std::map<std::pair<std::string, std::string>, JobCallSite> merged;
  for (const auto& r : records) {
    for (const auto& s : r.sites) {
      JobCallSite& site = merged[{s.call, s.site}];
      site.call = s.call;
      site.site = s.site;
      site.calls = std::max(site.calls, s.calls);
      site.wait_seconds += s.wait_seconds;
      site.wait_max_seconds = std::max(site.wait_max_seconds, s.wait_max_seconds);
    }
  }
  std::vector<JobCallSite> sites;
  for (auto& [key, site] : merged) sites.push_back(std::move(site));
  std::stable_sort(sites.begin(), sites.end(), [](const JobCallSite& a, const JobCallSite& b) {
    return a.wait_seconds > b.wait_seconds;
  });
  return sites;
}

// The late ranks that caused any waiting, most first (20 at most: a
// report names the worst, a page shows every rank).
std::vector<int> worst_ranks(const std::vector<JobRank>& ranks) {
  std::vector<std::size_t> order(ranks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranks[a].measures.wait_caused_seconds > ranks[b].measures.wait_caused_seconds;
  });
  std::vector<int> worst;
  for (std::size_t i : order) {
    if (!ranks[i].attribution.main_cause || ranks[i].measures.wait_caused_seconds <= 0) continue;
    worst.push_back(ranks[i].rank);
    if (worst.size() == 20) break;
  }
  return worst;
}

}  // namespace

const JobRank* JobReport::rank(int number) const {
  for (const JobRank& r : ranks) {
    if (r.rank == number) return &r;
  }
  return nullptr;
}

JobReport build_job_report(JobFacts facts, const std::vector<RankRecord>& records) {
  JobReport report;
  report.facts = std::move(facts);
  report.ranks_reported = records.size();

  std::vector<RankMeasures> measures;
  for (const auto& r : records) measures.push_back(r.measures);
  const RankMeasures reference = reference_rank(measures);
  const CauseThresholds threshold = cause_threshold(measures, reference);
  report.cause_threshold_seconds = threshold.seconds;
  report.cause_threshold_on_cpu_seconds = threshold.on_cpu_seconds;

  const NodeViews views = node_views(records);
  report.nodes = views.hosts.size();
  for (const auto& r : records) {
    RankAttribution a = attribute(r.measures, reference, threshold);
    if (!is_late(a, r.measures, threshold)) a.main_cause.reset();
    const double caused = r.measures.wait_caused_seconds;
    // The waiting this rank caused, shared among its causes.
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    if (explained > 0 && a.main_cause) {
      for (std::size_t i = 0; i < kJobCauseCount; ++i)
        report.causes[i] += caused * a.causes[i] / explained;
    }
    report.wait_seconds += r.measures.wait_seconds;
    report.compute_seconds += r.measures.compute_seconds;
    report.wait_caused_seconds += caused;
    report.exchange_wait_seconds += r.measures.exchange_wait_seconds;
    report.exchange_wait_caused_seconds += r.measures.exchange_wait_caused_seconds;
    report.exchange_uncharged_seconds += r.measures.exchange_uncharged_seconds;
    report.elapsed_seconds = std::max(report.elapsed_seconds, r.measures.elapsed_seconds);
    report.ranks.push_back({r.rank, r.host, r.cpus, r.pid, r.measures, a, culprits_of(r, a, views),
                            r.config.busy_threads_peak, verdicts_of(r, views)});
  }
  report.call_sites = merged_call_sites(records);
  report.worst_ranks = worst_ranks(report.ranks);
  report.findings = job_findings(records);
  report.phases = job_phases(records, report.facts.warmup_steps, report.facts.steps);
  for (const JobFacts::Step& s : report.facts.worst_steps) {
    report.worst_steps.push_back(step_in_phases(s.first_step, s.steps, s.wait_caused_seconds,
                                                s.last_rank, s.call, s.site, report.phases));
  }
  return report;
}

}  // namespace corenoise
