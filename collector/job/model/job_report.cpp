#include "collector/job/model/job_report.h"

#include <algorithm>
#include <limits>
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
  std::map<std::pair<std::string, unsigned>, std::vector<RankRecord::InterruptLine>> interrupts;
  std::map<std::pair<std::string, unsigned>, std::vector<RankRecord::TracedCulprit>> traced;
  std::map<std::string, std::map<unsigned, DaemonVerdict>> verdicts;
  std::set<std::string> hosts;
};

// From the node's first rank's record where it came in full, else from
// the node's digest.
NodeViews node_views(const std::vector<RankRecord>& records,
                     const std::map<int, NodeDigest>& digests) {
  NodeViews views;
  const auto add = [&views](const std::string& host,
                            const std::vector<RankRecord::Culprit>& culprits,
                            const std::vector<RankRecord::InterruptLine>& interrupts,
                            const std::vector<RankRecord::TracedCulprit>& traced,
                            const std::optional<std::map<unsigned, DaemonVerdict>>& daemon) {
    views.hosts.insert(host);
    for (const auto& c : culprits) {
      if (c.cpu >= 0) views.culprits[{host, static_cast<unsigned>(c.cpu)}].push_back(c);
    }
    for (const auto& line : interrupts) {
      if (line.cpu >= 0) views.interrupts[{host, static_cast<unsigned>(line.cpu)}].push_back(line);
    }
    for (const auto& c : traced) {
      if (c.cpu >= 0) views.traced[{host, static_cast<unsigned>(c.cpu)}].push_back(c);
    }
    if (daemon) views.verdicts[host] = *daemon;
  };
  for (const auto& r : records)
    add(r.host, r.node_culprits, r.node_interrupts, r.node_traced, r.node_daemon);
  for (const auto& [first, d] : digests) add(d.host, d.culprits, d.interrupts, d.traced, d.daemon);
  return views;
}

// A late rank's interrupt lines: those that fired most beyond the node's
// other CPUs on its CPUs, three at most. For interrupts, and for more work
// where a device's line did: a kernel without IRQ time accounting
// (CONFIG_IRQ_TIME_ACCOUNTING, off in many distributions' and clouds'
// kernels) charges a hard IRQ's time to the task it interrupted, which
// then reads as more work at the same clock.
void add_interrupt_lines(const RankRecord& r, const RankAttribution& a, const NodeViews& views,
                         std::vector<JobCulprit>& culprits) {
  constexpr std::size_t kShown = 3;
  const bool interrupts = a.main_cause == JobCause::interrupts;
  if (!interrupts && a.main_cause != JobCause::more_work) return;
  std::vector<const RankRecord::InterruptLine*> lines;
  for (unsigned cpu : r.cpus) {
    const auto it = views.interrupts.find({r.host, cpu});
    if (it == views.interrupts.end()) continue;
    for (const auto& line : it->second) {
      if (interrupts || line.from_a_device()) lines.push_back(&line);
    }
  }
  const std::size_t shown = std::min(kShown, lines.size());
  std::partial_sort(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(shown), lines.end(),
                    [](const auto* x, const auto* y) { return x->excess > y->excess; });
  for (std::size_t i = 0; i < shown; ++i) {
    const RankRecord::InterruptLine& line = *lines[i];
    JobCulprit c{line.softirq ? JobCulprit::Kind::softirq : JobCulprit::Kind::irq, line.name, 0,
                 static_cast<unsigned>(line.cpu), 0};
    c.line = line.id;
    c.count = line.count;
    c.excess = line.excess;
    culprits.push_back(std::move(c));
  }
}

// A late rank's traced culprits: what the node's corenoised saw run on its
// CPUs while the job ran, whatever its cause (the tracer sees what /proc
// cannot: which IRQ, which kernel thread, which work item), five at most:
// an IRQ's time may be its handler's or its softirq's, and both are named.
void add_traced(const RankRecord& r, const RankAttribution& a, const NodeViews& views,
                std::vector<JobCulprit>& culprits) {
  constexpr std::size_t kShown = 5;
  if (!a.main_cause) return;
  std::vector<std::pair<unsigned, const RankRecord::TracedCulprit*>> seen;
  for (unsigned cpu : r.cpus) {
    const auto it = views.traced.find({r.host, cpu});
    if (it == views.traced.end()) continue;
    for (const auto& c : it->second) seen.emplace_back(cpu, &c);
  }
  const std::size_t shown = std::min(kShown, seen.size());
  std::partial_sort(
      seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(shown), seen.end(),
      [](const auto& x, const auto& y) { return x.second->seconds > y.second->seconds; });
  for (std::size_t i = 0; i < shown; ++i) {
    const RankRecord::TracedCulprit& t = *seen[i].second;
    JobCulprit c{JobCulprit::Kind::traced, t.text, 0, seen[i].first, t.seconds};
    c.line = t.kind;
    c.share = t.share;
    culprits.push_back(std::move(c));
  }
}

// The culprits of the causes found: its busiest threads (three at most)
// for own-threads, the node's other processes on its CPUs for
// other-processes, the interrupt lines that fired more on its CPUs than on
// the node's others for interrupts and more-work.
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
  add_interrupt_lines(r, a, views, culprits);
  add_traced(r, a, views, culprits);
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

// Each column's latest rank of `rows`.
void latest_of(std::vector<float>& into, const std::vector<float>& row) {
  if (into.size() < row.size()) into.resize(row.size(), 0.0f);
  for (std::size_t c = 0; c < row.size(); ++c) into[c] = std::max(into[c], row[c]);
}

// Every node's row: its ranks' figures summed, from the summaries; its
// host and lateness from its digest, else from its ranks' records and
// rows (every record came: `facts.lateness` holds a row per record).
// The digests' rows are moved out of `facts`.
std::vector<JobNode> nodes_of(std::span<const RankSummary> all, const JobJudgement& judged,
                              const std::vector<RankRecord>& full, JobFacts& facts) {
  std::map<int, JobNode> nodes;
  std::map<int, double> worst_caused;
  std::map<int, int> node_of_rank;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RankSummary& s = all[i];
    JobNode& node = nodes[s.node_rank()];
    node.first_rank = s.node_rank();
    ++node.ranks;
    node.wait_seconds += s.measures.wait_seconds;
    node.wait_caused_seconds += s.measures.wait_caused_seconds;
    if (judged.late[i]) ++node.late_ranks;
    const double caused = s.measures.wait_caused_seconds;
    double& worst = worst_caused[s.node_rank()];
    if (caused > worst) {
      worst = caused;
      node.worst_rank = s.number();
    }
  }
  // From the records: the host of every node one came from; the lateness
  // where every record came (a node's row from some of its ranks would
  // understate it).
  for (const RankSummary& s : all) node_of_rank[s.number()] = s.node_rank();
  const bool every_row = facts.node_digests.empty() && facts.lateness.size() == full.size();
  for (std::size_t i = 0; i < full.size(); ++i) {
    const auto it = node_of_rank.find(full[i].rank);
    if (it == node_of_rank.end()) continue;
    JobNode& node = nodes[it->second];
    if (node.host.empty() || full[i].rank == node.first_rank) node.host = full[i].host;
    if (every_row) latest_of(node.lateness, facts.lateness[i]);
  }
  for (auto& [first, digest] : facts.node_digests) {
    if (auto it = nodes.find(first); it != nodes.end()) {
      it->second.host = digest.host;
      it->second.lateness = std::move(digest.lateness);
    }
  }
  std::vector<JobNode> rows;
  rows.reserve(nodes.size());
  for (auto& [first, node] : nodes) rows.push_back(std::move(node));
  return rows;
}

// The job's time `rank`'s lateness cost (JobFacts::savings, by rank).
double saving_of(const JobFacts& facts, int rank) {
  const auto it = std::lower_bound(facts.savings.begin(), facts.savings.end(),
                                   std::pair{rank, -std::numeric_limits<double>::infinity()});
  return it != facts.savings.end() && it->first == rank ? it->second : 0.0;
}

// A late rank's pattern over the job, from its row of the lateness matrix
// (rows in the order of the records in full); a step counts as late past
// the job's naming threshold shared over its steps.
std::optional<LatenessPattern> pattern_of(const JobReport& report, const RankAttribution& a,
                                          std::size_t row) {
  const JobFacts& facts = report.facts;
  if (!a.main_cause || row >= facts.lateness.size() || facts.steps < 1) return std::nullopt;
  const double per_step = report.cause_threshold_seconds / static_cast<double>(facts.steps);
  return lateness_pattern(facts.lateness[row], facts.steps_per_column, facts.steps,
                          report.elapsed_seconds, per_step, facts.column_end_seconds);
}

// A live epoch's window names a rank late in it before the job so far
// does: its pattern over the job (chronic since the window's noise began)
// where its row of the lateness matrix came.
void add_window_patterns(JobReport& report, const std::vector<RankRecord>& full) {
  for (JobFacts::Live::WindowRank& w : report.facts.live->window) {
    const auto row = std::find_if(full.begin(), full.end(),
                                  [&](const RankRecord& r) { return r.rank == w.rank; });
    if (row == full.end()) continue;
    RankAttribution late;
    late.main_cause = w.cause;
    w.pattern = pattern_of(report, late, static_cast<std::size_t>(row - full.begin()));
  }
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
    const RankAttribution a = judged.attribution_of(m);
    // The waiting this rank caused, shared among its causes.
    const double explained = std::accumulate(a.causes.begin(), a.causes.end(), 0.0);
    if (explained > 0 && a.main_cause) {
      const double saving = saving_of(report.facts, all[i].number());
      for (std::size_t k = 0; k < kJobCauseCount; ++k) {
        report.causes[k] += m.wait_caused_seconds * a.causes[k] / explained;
        report.savings[k] += saving * a.causes[k] / explained;
      }
    }
    report.wait_seconds += m.wait_seconds;
    report.compute_seconds += m.compute_seconds;
    report.wait_caused_seconds += m.wait_caused_seconds;
    report.exchange_wait_seconds += m.exchange_wait_seconds;
    report.exchange_wait_caused_seconds += m.exchange_wait_caused_seconds;
    report.exchange_uncharged_seconds += m.exchange_uncharged_seconds;
    report.elapsed_seconds = std::max(report.elapsed_seconds, m.elapsed_seconds);
  }
  // Each rank's summary by its number, sorted: sized by the ranks that
  // reported, never by the largest number (a spill file may claim rank
  // 2,000,000,000 of a job that size).
  std::vector<std::pair<int, std::size_t>> index_of_rank;
  index_of_rank.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) index_of_rank.emplace_back(all[i].number(), i);
  std::sort(index_of_rank.begin(), index_of_rank.end());
  const NodeViews views = node_views(full, report.facts.node_digests);
  for (std::size_t row = 0; row < full.size(); ++row) {
    const RankRecord& r = full[row];
    const auto it = std::lower_bound(index_of_rank.begin(), index_of_rank.end(),
                                     std::pair{r.rank, std::size_t{0}});
    if (it == index_of_rank.end() || it->first != r.rank) continue;
    const RankAttribution a = judged.attribution_of(all[it->second].measures);
    report.ranks.push_back({r.rank, r.host, r.cpus, r.pid, r.measures, a, culprits_of(r, a, views),
                            r.config.busy_threads_peak, verdicts_of(r, views),
                            pattern_of(report, a, row), saving_of(report.facts, r.rank)});
  }
  for (std::size_t i : worst_ranks(all, judged)) report.worst_ranks.push_back(all[i].number());
  if (report.facts.live) add_window_patterns(report, full);
  findings_and_sites(report.facts, all.size(), full, report);
  report.by_node = nodes_of(all, judged, full, report.facts);
  report.nodes = report.by_node.size();
  // All read: 7 MB at 100,000 ranks that the outputs need not hold.
  report.facts.node_digests.clear();
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
